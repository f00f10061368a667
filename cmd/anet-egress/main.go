// Command anet-egress is the only process of the node that holds model-service keys. It
// serves each run's endpoint (the model-API proxy and the CONNECT egress proxy) and never
// starts a program. Subcommands: serve (fd 3, started by anetd), endpoint, self-test.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/logging"
	"anet.dev/anet/pkg/reasons"
)

// commands is filled by the files of this package, one subcommand each.
var commands []*cli.Command

func main() {
	app := &cli.App{
		Name:            "anet-egress",
		Usage:           "the node's model proxy and egress endpoint",
		Commands:        commands,
		HideHelpCommand: true,
	}
	err := app.Run(os.Args)
	flushLog()
	if err != nil {
		// The rule's code on a line of its own, as anetd and anet print it.
		fmt.Fprintf(os.Stderr, "anet-egress: %s\n", reasons.Message(err))
		if c := reasons.CodeOf(err); c != "" {
			fmt.Fprintf(os.Stderr, "anet-egress: reason: %s\n", c)
		}
		os.Exit(1)
	}
}

// logger logs JSON lines to stderr: under anetd that is the log pipe, which anetd re-emits
// with this helper's name. Lines are written off the request path (one per model request);
// main flushes them before the process ends.
var logger, flushLog = logging.NewJSONAsync(os.Stderr, slog.LevelInfo)

func newLogger() *slog.Logger { return logger }
