// Command anet-demo is `make demo`: two throw-away nodes on loopback, a task from one
// answered by the other in its sandbox, the reply, both nodes' evidence and the run's usage,
// then nothing left behind (see pkg/demo). Run as `claude` (the demo copies it under that
// name), it is the demo's tiny agent instead. It is a demo, never installed.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/demo"
)

func main() {
	if filepath.Base(os.Args[0]) == "claude" {
		os.Exit(demo.RunAgent(os.Args, os.Getenv, os.Stdout, os.Stderr))
	}
	app := &cli.App{
		Name:  "anet-demo",
		Usage: "two throw-away nodes on loopback: a task, answered in the sandbox (make demo)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bin", Usage: "`DIR` with anetd, anet, anet-sandboxd and anet-egress (anetd and anet-egress a demo build)", Value: "bin/demo"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the demo's directory (the nodes' logs) instead of removing it"},
		},
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			bin, err := filepath.Abs(c.String("bin"))
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if err := demo.Run(ctx, demo.Options{BinDir: bin, Agent: self, Out: os.Stdout, Keep: c.Bool("keep")}); err != nil {
				return err
			}
			fmt.Println("\ndemo done: a stranger's task was answered in the sandbox, and nothing is left behind")
			return nil
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "anet-demo: %v\n", err)
		os.Exit(1)
	}
}
