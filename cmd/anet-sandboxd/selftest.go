package main

import (
	"cmp"
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
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

// serveSelfTest answers anetd's MethodSelfTest (its proof of the wall, S7, S8) with the very
// Launcher serve runs turns with, so the battery meets the tier and the bwrap the turns get. A
// launcher that could not be set up has no wall to prove: the error says why, with its code.
func serveSelfTest(l launcher, lerr error) privsep.Handler {
	return func(ctx context.Context, req *privsep.Request) (privsep.Reply, error) {
		var in sandbox.SelfTestRequest
		if err := req.Decode(&in); err != nil {
			return privsep.Reply{}, err
		}
		ll, ok := l.(*launch.Launcher)
		if !ok {
			if lerr == nil {
				lerr = fmt.Errorf("no launcher")
			}
			return privsep.Reply{}, reasons.New(cmp.Or(sandbox.CodeOf(lerr), reasons.SandboxUnavailable), "self-test: "+lerr.Error())
		}
		lim := in.Limits
		// The battery's wall clock is its own: a turn's api_timeout may be shorter than the
		// battery needs.
		lim.WallClock, lim.Grace = 0, 0
		res, err := launch.SelfTest(ctx, ll, launch.SelfTestOptions{Limits: lim})
		if err != nil {
			// Set-up failed (canaries, the run root): the helper's own code when it has one.
			if code := sandbox.CodeOf(err); code != "" {
				return privsep.Reply{}, reasons.New(code, err.Error())
			}
			return privsep.Reply{}, err
		}
		return privsep.Reply{Body: res}, nil
	}
}
