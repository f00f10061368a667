//go:build !nobackend

package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/sandbox/seatbelt"
)

func init() { commands = append(commands, seatbeltCheckCommand(), seatbeltRunCommand()) }

// seatbeltCheckCommand is the self-check program: the Seatbelt backend runs it inside a
// run's profile before every turn (M1); people do not.
func seatbeltCheckCommand() *cli.Command {
	return &cli.Command{
		Name:   seatbelt.CheckCommand,
		Hidden: true,
		Usage:  "run the self-check items (inside a Seatbelt profile)",
		Flags:  []cli.Flag{&cli.StringFlag{Name: "targets", Usage: "what the host side opened (JSON)"}},
		Action: func(c *cli.Context) error {
			var t seatbelt.Targets
			if err := json.Unmarshal([]byte(c.String("targets")), &t); err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd %s: --targets: %v", seatbelt.CheckCommand, err), check.ExitCannotRun)
			}
			checks := seatbelt.RunChecks(t)
			if err := json.NewEncoder(os.Stdout).Encode(checks); err != nil {
				return err
			}
			return cli.Exit("", check.New(checks...).ExitCode())
		},
	}
}

// seatbeltRunCommand is the limits wrapper every Seatbelt run starts under (S6).
func seatbeltRunCommand() *cli.Command {
	return &cli.Command{
		Name:      seatbelt.WrapCommand,
		Hidden:    true,
		Usage:     "set a run's resource limits and start sandbox-exec under them",
		ArgsUsage: "-- /usr/bin/sandbox-exec …",
		Flags: []cli.Flag{
			&cli.Uint64Flag{Name: "cpu"}, &cli.Uint64Flag{Name: "fsize"},
			&cli.Uint64Flag{Name: "nofile"}, &cli.Uint64Flag{Name: "nproc"},
		},
		Action: func(c *cli.Context) error {
			lim := seatbelt.RunLimits{CPU: c.Uint64("cpu"), FileSize: c.Uint64("fsize"), OpenFiles: c.Uint64("nofile"), Procs: c.Uint64("nproc")}
			return cli.Exit("", seatbelt.Wrap(lim, c.Args().Slice(), os.Stderr))
		},
	}
}
