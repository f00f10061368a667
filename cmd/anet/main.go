// Command anet is the operator's CLI. It talks to anetd only through the control socket
// (pkg/control) and edits the operator's own config file; it never reads the keys file.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/termsafe"
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
		CommandNotFound: commandNotFound,
	}
	if err := app.Run(interspersed(app, os.Args)); err != nil {
		printError(os.Stderr, err)
		os.Exit(1)
	}
}

// printError writes err and, when it carries one, its reason code on a line of its own (the
// code is not repeated in front of the message). An error may quote a peer's id or an
// agent's words, so it goes through termsafe (U1).
func printError(w io.Writer, err error) {
	msg := err.Error()
	// anetd's answer's code, or that of a rule checked here (a config or keys-file refusal).
	code := reasons.CodeOf(err)
	if code != "" {
		msg = strings.TrimPrefix(msg, string(code)+": ")
	}
	fmt.Fprintf(w, "anet: %s\n", termsafe.Text(msg))
	if code != "" {
		fmt.Fprintf(w, "anet: reason: %s\n", termsafe.Line(string(code)))
	}
}

func commands() []*cli.Command {
	return []*cli.Command{
		statusCommand(),
		doctorCommand(),
		evidenceCommand(),
		configCommand(),
		reloadCommand(),
		dashboardCommand(),
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
