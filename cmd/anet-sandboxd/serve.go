package main

import (
	"context"
	"os"
	"runtime"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/sandbox"
)

func init() { commands = append(commands, serveCommand()) }

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve anetd over fd 3 (started by anetd, not by hand)",
		Action: func(c *cli.Context) error {
			log := newLogger()
			l, lerr := newLauncher(log)
			info := func() map[string]any {
				m := map[string]any{"platform": runtime.GOOS + "/" + runtime.GOARCH}
				if lerr != nil {
					m["launcher_error"] = lerr.Error()
				}
				return m
			}
			handlers := map[string]privsep.Handler{
				privsep.MethodStatus: func(context.Context, *privsep.Request) (privsep.Reply, error) {
					return privsep.Reply{Body: map[string]any{"pid": os.Getpid()}}, nil
				},
				sandbox.MethodProbe: func(ctx context.Context, _ *privsep.Request) (privsep.Reply, error) {
					if lerr != nil {
						// Fail closed: no launcher, no sandbox.
						return privsep.Reply{Body: sandbox.ProbeResult{OK: false, Code: sandbox.CodeOf(lerr), Detail: lerr.Error()}}, nil
					}
					res, err := l.Probe(ctx)
					if err != nil {
						return privsep.Reply{Body: sandbox.ProbeResult{OK: false, Code: sandbox.CodeOf(err), Detail: err.Error()}}, nil
					}
					return privsep.Reply{Body: res}, nil
				},
			}
			for m, h := range runHandlers(l, lerr) {
				handlers[m] = h
			}
			err := privsep.ServeHelper(c.Context, "sandboxd", handlers, info, log)
			// EOF of fd 3, SIGTERM or SIGINT: every run ends with the helper.
			if k, ok := l.(interface{ KillAll() }); ok && lerr == nil {
				k.KillAll()
			}
			return err
		},
	}
}
