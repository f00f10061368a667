package main

import (
	"context"
	"os"
	"runtime"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/remote"
)

func init() { commands = append(commands, serveCommand()) }

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve anetd over fd 3 (started by anetd, not by hand)",
		Flags: isolationFlags(),
		Action: func(c *cli.Context) error {
			log := newLogger()
			l, backend, lerr := newLauncher(c, log)
			info := func() map[string]any {
				m := map[string]any{"platform": runtime.GOOS + "/" + runtime.GOARCH, "backend": backend}
				if lerr != nil {
					m["launcher_error"] = lerr.Error()
				}
				return m
			}
			handlers := remote.Handlers(l)
			handlers[sandbox.MethodSelfTest] = privsep.OneAtATime(sandbox.MethodSelfTest, sandbox.SelfTestTimeout, serveSelfTest(l, lerr))
			handlers[privsep.MethodStatus] = func(context.Context, *privsep.Request) (privsep.Reply, error) {
				return privsep.Reply{Body: map[string]any{"pid": os.Getpid()}}, nil
			}
			err := privsep.ServeHelper(c.Context, "sandboxd", handlers, info, log)
			// EOF of fd 3, SIGTERM or SIGINT: every run ends with the helper, and its dirs
			// and cgroups are removed before the helper exits.
			l.StopAll()
			return err
		},
	}
}
