package main

import (
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/endpoint/selftest"
	"anet.dev/anet/pkg/privsep"
)

func init() { commands = append(commands, selfTestCommand()) }

func selfTestCommand() *cli.Command {
	return &cli.Command{
		Name:  "self-test",
		Usage: "attack a throw-away endpoint (fake upstream, test CA) with the rule, egress and limit batteries; non-zero if anything gets through",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"}},
		Action: func(c *cli.Context) error {
			ctx, cancel := context.WithTimeout(c.Context, egresswire.SelfTestTimeout)
			defer cancel()
			rep, err := selftest.Run(ctx)
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-egress self-test: %v", err), check.ExitCannotRun)
			}
			if c.Bool("json") {
				err = check.WriteJSON(os.Stdout, rep)
			} else {
				err = rep.WriteText(os.Stdout)
			}
			if err != nil {
				return err
			}
			return cli.Exit("", rep.ExitCode())
		},
	}
}

// serveSelfTest answers anetd's MethodSelfTest (its proof of the wall, E1, H4, H5, R1): the
// same battery as the command, in the serving helper, against endpoints of its own with a
// throw-away CA and a stand-in upstream; the operator's keys are not used.
func serveSelfTest(ctx context.Context, _ *privsep.Request) (privsep.Reply, error) {
	rep, err := selftest.Run(ctx)
	if err != nil {
		return privsep.Reply{}, fmt.Errorf("self-test could not be set up: %w", err)
	}
	return privsep.Reply{Body: rep}, nil
}
