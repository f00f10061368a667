// Command anet is the operator's CLI. It talks to anetd only through the control socket
// (pkg/control) and edits the operator's own config file; it never reads the keys file.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/control"
)

var version = "dev"

func main() {
	app := &cli.App{
		Name:    "anet",
		Usage:   "control the ANet node",
		Version: version,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "config file (default $XDG_CONFIG_HOME/anet/config.yaml)"},
		},
		Commands:        commands(),
		HideHelpCommand: true,
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "anet: %v\n", err)
		var re *control.RemoteError
		if errors.As(err, &re) && re.Code != "" {
			fmt.Fprintf(os.Stderr, "anet: reason: %s\n", re.Code)
		}
		os.Exit(1)
	}
}

func commands() []*cli.Command {
	return []*cli.Command{
		statusCommand(),
		doctorCommand(),
		evidenceCommand(),
		configCommand(),
		// Peer transport commands.
		peerCommand(),
		trustCommand(),
		sendCommand(),
		inboxCommand(),
		showCommand(),
		replyCommand(),
		autoReplyCommand(),
	}
}
