package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/doctor"
	"anet.dev/anet/pkg/helperpath"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/termsafe"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the host and the node: bubblewrap, user namespaces, the sandbox probe, helpers",
		Flags: []cli.Flag{
			jsonFlag,
			&cli.BoolFlag{Name: "apparmor-profile", Usage: "print the AppArmor profile for bwrap (writes no file)"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("apparmor-profile") {
				_, err := fmt.Fprint(os.Stdout, doctor.AppArmorProfile)
				return err
			}
			var r doctor.Report
			r.Add(check.Prefixed("host", doctor.System.HostChecks())...)
			// What anetd --check checks: config file, socket paths, keys file (one rule each).
			r.Add(check.Prefixed("config", doctor.ConfigChecks(c.Context, preflight.Options{Env: os.Getenv, ConfigPath: c.String("config")}))...)
			p, err := runProbe()
			r.Add(doctor.ProbeChecks(p, err)...)
			if p != nil {
				r.Limits, r.Warnings = p.Limits, p.Warnings
			}
			var st control.Status
			if err := call(c, "GET", "/v1/status", nil, &st); err != nil {
				r.NodeError = err.Error()
			} else {
				r.Node = &st
				r.Add(doctor.HelperChecks(st.Helpers)...)
			}
			if c.Bool("json") {
				err = printJSON(r)
			} else {
				// The probe's details quote bwrap; the node's warnings may quote an agent (U1).
				termsafe.Walk(&r, termsafe.Line)
				err = r.WriteText(os.Stdout, doctorNotes(r)...)
			}
			if err != nil {
				return err
			}
			return cli.Exit("", r.ExitCode())
		},
	}
}

// runProbe runs the sandbox probe through anet-sandboxd, the program that owns the sandbox.
func runProbe() (*sandbox.ProbeResult, error) {
	// The same search as anetd's: beside anet in a build tree, ../libexec/anet in a package.
	dir, err := helperpath.ForThisProgram("")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, helperpath.Sandboxd)
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "probe", "--json")
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var p sandbox.ProbeResult
	if jerr := json.Unmarshal(out.Bytes(), &p); jerr != nil {
		if err == nil {
			err = jerr
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) && errb.Len() > 0 {
			return nil, fmt.Errorf("%s probe: %v: %s", bin, err, bytes.TrimSpace(errb.Bytes()))
		}
		return nil, fmt.Errorf("%s probe: %w", bin, err)
	}
	return &p, nil
}

// doctorNotes are the lines beside the checks: the limits mechanism, warnings, the node.
func doctorNotes(r doctor.Report) []string {
	var notes []string
	if r.Limits != "" {
		notes = append(notes, "limits: "+string(r.Limits))
	}
	for _, w := range r.Warnings {
		notes = append(notes, fmt.Sprintf("warning %s: %s", w, reasons.Text(w)))
	}
	if r.Node == nil {
		notes = append(notes, "node: not running ("+r.NodeError+")")
	} else {
		for _, w := range r.Node.Warnings {
			notes = append(notes, fmt.Sprintf("warning %s: %s %s", w.Code, w.Text, w.Detail))
		}
	}
	return notes
}
