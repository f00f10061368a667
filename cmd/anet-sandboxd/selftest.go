package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/sandbox/launch"
)

func init() { commands = append(commands, selfTestCommand()) }

func selfTestCommand() *cli.Command {
	return &cli.Command{
		Name:  "self-test",
		Usage: "probe the sandbox and run the attack battery against this host; non-zero if anything is not blocked",
		Flags: append([]cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"}}, isolationFlags()...),
		Action: func(c *cli.Context) error {
			closeInheritedFds()
			l, err := launch.New(launchOptions(c, quietLogger()))
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd self-test: %v", err), check.ExitCannotRun)
			}
			defer l.Settle()
			res, err := launch.SelfTest(c.Context, l, launch.SelfTestOptions{})
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd self-test: %v", err), check.ExitCannotRun)
			}
			if c.Bool("json") {
				err = check.WriteJSON(os.Stdout, res)
			} else {
				err = res.WriteText(os.Stdout, probeNotes(res.Limits, res.Warnings)...)
			}
			if err != nil {
				return err
			}
			return cli.Exit("", res.ExitCode())
		},
	}
}
