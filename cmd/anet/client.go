package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/termsafe"
)

// dial finds the control socket and token of the operator's running anetd.
func dial() (*control.Client, error) {
	p, err := config.DefaultPaths(os.Getenv)
	if err != nil {
		return nil, err
	}
	// The socket first: another user's socket is said to be theirs before their token (which
	// root could read) is sent to be refused, and a missing one means no anetd.
	if err := control.CheckSocket(p.ControlSocket()); err != nil {
		return nil, err
	}
	tok, err := control.ReadToken(p.ControlToken())
	if err != nil {
		return nil, err
	}
	return control.NewClient(p.ControlSocket(), tok), nil
}

func call(c *cli.Context, method, path string, in, out any) error {
	cl, err := dial()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, 5*time.Minute)
	defer cancel()
	return cl.Do(ctx, method, path, in, out)
}

// cannotRun ends a command that reports checks but could not run them (the node did not
// answer): exit check.ExitCannotRun with the message main prints for any other error.
func cannotRun(err error) error {
	var b strings.Builder
	printError(&b, err)
	return cli.Exit(strings.TrimSuffix(b.String(), "\n"), check.ExitCannotRun)
}

// printJSON writes v for scripts: the exact text of every field, with the controls a
// terminal would act on escaped the JSON way (U1).
func printJSON(v any) error { return termsafe.JSON(os.Stdout, v) }

var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"}
