// Command anet-sandboxd is the only process of the node that starts agents: in bubblewrap
// with seccomp on Linux (Seatbelt on macOS), or unsandboxed for trusted peers in direct mode.
// It never holds a model key. Subcommands: serve (fd 3, started by anetd), exec, probe,
// self-test, and the hidden attack (the battery, inside a sandbox). Every one of them starts
// runs through one sandbox.Launcher (pkg/sandbox/launch); this package only wires. A run's
// pid 1 is the separate anet-runinit (./anet-runinit), installed beside this program.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/logging"
)

// commands is filled by the files of this package, one subcommand each.
var commands []*cli.Command

func main() {
	app := &cli.App{
		Name:     "anet-sandboxd",
		Usage:    "start agents in the node's sandbox",
		Commands: commands,
		// Helpers never read configuration from the environment: anetd passes what they
		// need over fd 3.
		HideHelpCommand: true,
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "anet-sandboxd: %v\n", err)
		os.Exit(exitCode(err))
	}
}

func exitCode(err error) int {
	if ec, ok := err.(cli.ExitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}

// newLogger logs JSON lines to stderr: under anetd that is the log pipe, which anetd
// re-emits with this helper's name.
func newLogger() *slog.Logger {
	return logging.NewJSON(os.Stderr, slog.LevelInfo)
}
