package main

import (
	"context"
	"os"
	"runtime"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/privsep"
)

func init() { commands = append(commands, serveCommand()) }

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve anetd over fd 3 (started by anetd, not by hand)",
		Action: func(c *cli.Context) error {
			log := newLogger()
			info := func() map[string]any {
				return map[string]any{"platform": runtime.GOOS + "/" + runtime.GOARCH}
			}
			handlers := map[string]privsep.Handler{
				privsep.MethodStatus: func(context.Context, *privsep.Request) (privsep.Reply, error) {
					return privsep.Reply{Body: map[string]any{"pid": os.Getpid(), "runs": 0}}, nil
				},
			}
			return privsep.ServeHelper(c.Context, "sandboxd", handlers, info, log)
		},
	}
}
