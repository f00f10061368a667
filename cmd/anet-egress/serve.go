package main

import (
	"context"
	"errors"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/privsep"
)

func init() { commands = append(commands, serveCommand()) }

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve anetd over fd 3 (started by anetd, not by hand)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "keys", Usage: "the operator's keys file (read here, never by anetd)", Required: true},
		},
		Action: func(c *cli.Context) error {
			log := newLogger()
			// The keys are read once, here, and stay in this process. anetd only ever
			// learns which providers have one.
			k, err := keys.Load(c.String("keys"))
			keysErr := ""
			if err != nil {
				// Keep serving so anetd can show the reason; every model request is refused
				// with no_api_key until the file is fixed and the helper restarted.
				keysErr = err.Error()
				log.Error("keys file refused", "err", err)
			}
			info := func() map[string]any {
				m := map[string]any{"providers_with_key": k.Configured()}
				if keysErr != "" {
					m["keys_error"] = keysErr
				}
				return m
			}
			handlers := map[string]privsep.Handler{
				privsep.MethodStatus: func(context.Context, *privsep.Request) (privsep.Reply, error) {
					st := info()
					st["pid"] = os.Getpid()
					return privsep.Reply{Body: st}, nil
				},
			}
			err = privsep.ServeHelper(c.Context, "egress", handlers, info, log)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
}
