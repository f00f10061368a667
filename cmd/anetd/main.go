// Command anetd is the ANet node daemon. It runs unprivileged, as the operator's user. See
// pkg/node for what it does; this file only parses flags and wires.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/logging"
	"anet.dev/anet/pkg/node"
	"anet.dev/anet/pkg/reasons"
)

// version is set by the linker for releases.
var version = "dev"

func main() {
	app := &cli.App{
		Name:      "anetd",
		Usage:     "the ANet node daemon",
		Version:   version,
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "config file (default $XDG_CONFIG_HOME/anet/config.yaml)"},
			&cli.StringFlag{Name: "helper-dir", Usage: "directory holding anet-sandboxd and anet-egress (default: beside anetd, else ../libexec/anet)"},
			&cli.BoolFlag{Name: "check", Usage: "check the configuration and exit"},
			&cli.BoolFlag{Name: "reload", Usage: "ask the running anetd to reload its configuration and keys; non-zero if it kept the old settings (ExecReload=)"},
		},
		HideHelpCommand: true,
		Action:          run,
	}
	if err := app.Run(os.Args); err != nil {
		// The rule's code on a line of its own, as anet prints it (one code per rule, on
		// every path that checks it).
		fmt.Fprintf(os.Stderr, "anetd: %s\n", reasons.Message(err))
		if c := reasons.CodeOf(err); c != "" {
			fmt.Fprintf(os.Stderr, "anetd: reason: %s\n", c)
		}
		os.Exit(1)
	}
}

func run(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", c.Args().First())
	}
	if c.Bool("reload") {
		return reload(c)
	}
	o := node.Options{ConfigPath: c.String("config"), HelperDir: c.String("helper-dir"), Env: os.Getenv, Version: version}
	// Loaded once: the log level and the node come from the same reading of the file. A
	// config error is printed by main.
	p, cfg, err := node.Load(o)
	if err != nil {
		return err
	}
	if c.Bool("check") {
		fmt.Printf("configuration %s is valid\n", p.ConfigFile)
		return nil
	}
	// A reload changes the level in place.
	o.LogLevel = new(slog.LevelVar)
	o.LogLevel.Set(cfg.LogLevel.Slog())
	log := logging.New(os.Stderr, o.LogLevel)
	// Packages that log through the default logger get the same handler and redaction.
	slog.SetDefault(log)
	return node.Run(context.Background(), o, p, cfg, log)
}

// reload asks the running anetd to reload (U3) and reports what it answered.
func reload(c *cli.Context) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ans, err := node.AskReload(ctx, os.Getenv)
	if err != nil {
		return err
	}
	fmt.Printf("anetd reloaded %s\n", ans.ConfigPath)
	for _, k := range ans.RestartNeeded {
		fmt.Printf("%s changed: restart anetd to apply it\n", k)
	}
	return nil
}
