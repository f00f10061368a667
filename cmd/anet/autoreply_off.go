//go:build noautoreply

package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

var errNotInBuild = errors.New("auto-reply is not in this build (built with -tags noautoreply); tasks wait in the inbox for `anet reply`")

// autoReplyCommand keeps the command so that scripts get a clear answer (C5).
func autoReplyCommand() *cli.Command {
	fail := func(*cli.Context) error { return errNotInBuild }
	return &cli.Command{
		Name:  "autoreply",
		Usage: "auto-reply is not in this build",
		Subcommands: []*cli.Command{
			{Name: "test", Usage: "not in this build", Action: fail},
			{Name: "show", Usage: "not in this build", Action: fail},
			{Name: "set", Usage: "not in this build", Action: fail},
		},
		Action: fail,
	}
}
