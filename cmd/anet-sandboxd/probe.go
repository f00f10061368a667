package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
)

func init() { commands = append(commands, probeCommand()) }

func probeCommand() *cli.Command {
	return &cli.Command{
		Name:  "probe",
		Usage: "check that sandboxed runs work on this host (S7's five properties)",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
			// A backend whose runs cannot carry the checks in their init (pkg/sandbox/gate)
			// probes with this as the program of a run of its own.
			&cli.BoolFlag{Name: "inside", Hidden: true, Usage: "run the checks (inside the sandbox)"},
			&cli.StringFlag{Name: "targets", Hidden: true, Usage: "canaries opened by the host side (JSON)"},
		}, isolationFlags()...),
		Action: func(c *cli.Context) error {
			if c.Bool("inside") {
				var t attack.ProbeTargets
				if err := json.Unmarshal([]byte(c.String("targets")), &t); err != nil {
					return cli.Exit(fmt.Sprintf("anet-sandboxd probe: --targets: %v", err), check.ExitCannotRun)
				}
				checks := attack.ProbeChecks(t)
				_ = json.NewEncoder(os.Stdout).Encode(checks)
				return cli.Exit("", check.New(checks...).ExitCode())
			}
			closeInheritedFds()
			l, _, err := newLauncher(c, quietLogger())
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd probe: %v", err), check.ExitCannotRun)
			}
			res, err := l.Probe(c.Context)
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd probe: %v", err), check.ExitCannotRun)
			}
			if err := printProbe(os.Stdout, res, c.Bool("json")); err != nil {
				return err
			}
			return cli.Exit("", res.Report().ExitCode())
		},
	}
}

func printProbe(w io.Writer, res sandbox.ProbeResult, asJSON bool) error {
	if asJSON {
		return check.WriteJSON(w, res)
	}
	return res.Report().WriteText(w, probeNotes(res.Limits, res.Warnings)...)
}

// probeNotes are the lines the probe and self-test print beside their checks.
func probeNotes(limits sandbox.CgroupLimits, warnings []reasons.Code) []string {
	notes := []string{"limits: " + string(limits)}
	for _, wc := range warnings {
		notes = append(notes, fmt.Sprintf("warning %s: %s", wc, reasons.Text(wc)))
	}
	return notes
}
