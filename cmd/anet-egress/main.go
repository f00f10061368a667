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
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "anet-egress: %v\n", err)
		os.Exit(1)
	}
}

// newLogger logs JSON lines to stderr: under anetd that is the log pipe, which anetd
// re-emits with this helper's name.
func newLogger() *slog.Logger {
	return logging.NewJSON(os.Stderr, slog.LevelInfo)
}
