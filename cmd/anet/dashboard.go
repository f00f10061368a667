package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/control"
)

func dashboardCommand() *cli.Command {
	return &cli.Command{
		Name:  "dashboard",
		Usage: "print a one-time URL that logs a browser in to the local web dashboard (dashboard.listen)",
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			var ans control.DashboardLogin
			if err := call(c, "POST", "/v1/dashboard/login", struct{}{}, &ans); err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(ans)
			}
			// The URL is the login: it works once, so it is printed, never put in argv of
			// another program (a browser's command line is readable by every local user).
			fmt.Println(ans.URL)
			fmt.Printf("Open it in a browser on this machine; it logs one browser in, once, until %s.\n", ans.ExpiresAt.Local().Format(time.TimeOnly))
			return nil
		},
	}
}
