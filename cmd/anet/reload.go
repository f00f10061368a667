package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/control"
)

func reloadCommand() *cli.Command {
	return &cli.Command{
		Name:  "reload",
		Usage: "make the running anetd read its config and keys files again; runs in flight keep their settings",
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			var ans control.ReloadAnswer
			if err := call(c, "POST", "/v1/reload", struct{}{}, &ans); err != nil {
				if errors.Is(err, control.ErrNotRunning) {
					// Nothing kept anything: there is no anetd, and one started now reads the files.
					return fmt.Errorf("nothing to reload: %w", err)
				}
				return fmt.Errorf("anetd kept the settings it had: %w", err)
			}
			if c.Bool("json") {
				return printJSON(ans)
			}
			printReload(ans)
			return nil
		},
	}
}

func printReload(ans control.ReloadAnswer) {
	fmt.Printf("anetd reloaded %s; runs that start from now on use it\n", ans.ConfigPath)
	for _, k := range ans.RestartNeeded {
		fmt.Printf("%s changed: restart anetd to apply it\n", k)
	}
}

// applyToRunning makes a running anetd take the file the CLI just wrote (U3), and says
// what happened: applied, not running (it applies at start), another file, or refused (an
// error: the file is written but the daemon kept its settings).
//
// Each line says one thing: a key that only a restart applies (ans.RestartNeeded) is said to be
// written and to need a restart, never to be applied.
func applyToRunning(c *cli.Context, key, value, path string) error {
	what := key + " = " + value
	var st control.Status
	err := call(c, "GET", "/v1/status", nil, &st)
	switch {
	case errors.Is(err, control.ErrNotRunning):
		fmt.Printf("%s written to %s; anetd is not running: it applies at start\n", what, path)
		return nil
	case err != nil:
		return fmt.Errorf("%s written to %s, but anetd could not be asked to apply it: %w", what, path, err)
	}
	if abs, _ := filepath.Abs(path); abs != st.ConfigPath {
		fmt.Printf("%s written to %s; the running anetd reads %s, so it is not applied\n", what, path, st.ConfigPath)
		return nil
	}
	var ans control.ReloadAnswer
	if err := call(c, "POST", "/v1/reload", struct{}{}, &ans); err != nil {
		return fmt.Errorf("%s written to %s, but anetd kept the settings it had: %w", what, path, err)
	}
	pending := []string{}
	applied := true
	for _, k := range ans.RestartNeeded {
		if k == key || strings.HasPrefix(key, k+".") {
			applied = false
		} else {
			pending = append(pending, k)
		}
	}
	if applied {
		fmt.Printf("%s written to %s and applied\n", what, path)
	} else {
		fmt.Printf("%s written to %s; %s takes effect when anetd restarts (the running anetd keeps the value it started with)\n", what, path, key)
	}
	for _, k := range pending {
		fmt.Printf("%s changed earlier: restart anetd to apply it\n", k)
	}
	return nil
}
