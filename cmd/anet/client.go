package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
)

// dial finds the control socket and token of the operator's running anetd.
func dial() (*control.Client, error) {
	p, err := config.DefaultPaths(os.Getenv)
	if err != nil {
		return nil, err
	}
	tok, err := control.ReadToken(p.ControlToken())
	if err != nil {
		return nil, fmt.Errorf("%w; start it with `anetd` (or `systemctl --user start anetd`)", err)
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
	msg := "anet: " + err.Error()
	var re *control.RemoteError
	if errors.As(err, &re) && re.Code != "" {
		msg += "\nanet: reason: " + string(re.Code)
	}
	return cli.Exit(msg, check.ExitCannotRun)
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"}
