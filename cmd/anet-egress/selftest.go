package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/endpoint/selftest"
)

func init() { commands = append(commands, selfTestCommand()) }

func selfTestCommand() *cli.Command {
	return &cli.Command{
		Name:  "self-test",
		Usage: "attack a throw-away endpoint (fake upstream, test CA) with the rule, egress and limit batteries; non-zero if anything gets through",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"}},
		Action: func(c *cli.Context) error {
			ctx, cancel := context.WithTimeout(c.Context, 2*time.Minute)
			defer cancel()
			rep, err := selftest.Run(ctx)
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-egress self-test: %v", err), check.ExitCannotRun)
			}
			if c.Bool("json") {
				err = check.WriteJSON(os.Stdout, rep)
			} else {
				err = rep.WriteText(os.Stdout)
			}
			if err != nil {
				return err
			}
			return cli.Exit("", rep.ExitCode())
		},
	}
}
