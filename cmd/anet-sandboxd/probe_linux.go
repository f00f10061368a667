package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
)

func init() { commands = append(commands, probeCommand()) }

func probeCommand() *cli.Command {
	return &cli.Command{
		Name:  "probe",
		Usage: "check that sandboxed runs work on this host (S7's five properties)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			&cli.BoolFlag{Name: "inside", Hidden: true, Usage: "run the checks (inside the sandbox)"},
			&cli.StringFlag{Name: "targets", Hidden: true, Usage: "canaries opened by the host side (JSON)"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("inside") {
				var t bwrap.ProbeTargets
				if err := json.Unmarshal([]byte(c.String("targets")), &t); err != nil {
					return cli.Exit(fmt.Sprintf("anet-sandboxd probe: --targets: %v", err), 2)
				}
				checks := bwrap.InsideChecks(t)
				_ = json.NewEncoder(os.Stdout).Encode(checks)
				for _, ch := range checks {
					if !ch.OK {
						return cli.Exit("", 1)
					}
				}
				return nil
			}
			res, err := hostProbe(c.Context)
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd probe: %v", err), 2)
			}
			printProbe(os.Stdout, res, c.Bool("json"))
			if !res.OK {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func hostProbe(ctx context.Context) (sandbox.ProbeResult, error) {
	closeInheritedFds()
	l, err := bwrap.New(bwrap.Config{Log: quietLogger()})
	if err != nil {
		return sandbox.ProbeResult{}, err
	}
	return l.ProbeUncached(ctx)
}

func printProbe(w io.Writer, res sandbox.ProbeResult, asJSON bool) {
	if asJSON {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		_ = e.Encode(res)
		return
	}
	for _, ch := range res.Checks {
		mark := "ok  "
		if !ch.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s %-14s %s\n", mark, ch.Name, ch.Detail)
	}
	fmt.Fprintf(w, "limits: %s\n", res.Limits)
	for _, wc := range res.Warnings {
		fmt.Fprintf(w, "warning %s: %s\n", wc, reasons.Text(wc))
	}
	if res.OK {
		fmt.Fprintln(w, "sandbox: available")
	} else {
		fmt.Fprintf(w, "sandbox: unavailable: %s: %s (%s)\n", res.Code, reasons.Text(res.Code), res.Detail)
	}
}
