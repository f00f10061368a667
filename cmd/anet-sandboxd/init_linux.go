package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/sandbox/runinit"
)

func init() { commands = append(commands, initCommand()) }

// initCommand is pid 1 inside every sandbox (E1, S2); bwrap starts it, not people.
func initCommand() *cli.Command {
	return &cli.Command{
		Name:   "init",
		Hidden: true,
		Usage:  "pid 1 inside a sandbox: relay loopback to the endpoint, run the agent",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "endpoint"},
			&cli.IntFlag{Name: "port"},
			&cli.StringFlag{Name: "env-file"},
		},
		Action: func(c *cli.Context) error {
			o := runinit.InitOptions{Port: c.Int("port"), EnvFile: c.String("env-file"), Argv: c.Args().Slice(), Stderr: os.Stderr}
			if ep := c.String("endpoint"); ep != "" {
				o.Upstream = runinit.UnixSocket(ep)
			}
			return cli.Exit("", runinit.Init(o))
		},
	}
}
