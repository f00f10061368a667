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

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/doctor"
	"anet.dev/anet/pkg/helperpath"
	"anet.dev/anet/pkg/reasons"
)

// probeAnswer is the part of `anet-sandboxd probe --json` that doctor reads.
type probeAnswer struct {
	OK       bool           `json:"ok"`
	Code     reasons.Code   `json:"code,omitempty"`
	Detail   string         `json:"detail,omitempty"`
	Checks   []doctor.Check `json:"checks"`
	Limits   string         `json:"limits"`
	Warnings []reasons.Code `json:"warnings,omitempty"`
}

// doctorReport is `anet doctor --json`.
type doctorReport struct {
	OK     bool            `json:"ok"`
	Host   []doctor.Check  `json:"host"`
	Probe  *probeAnswer    `json:"probe,omitempty"`
	ProbeE string          `json:"probe_error,omitempty"`
	Node   *control.Status `json:"node,omitempty"`
	NodeE  string          `json:"node_error,omitempty"`
}

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
			r := doctorReport{OK: true, Host: doctor.System.HostChecks()}
			for _, h := range r.Host {
				r.OK = r.OK && h.OK
			}
			if p, err := runProbe(); err != nil {
				r.OK, r.ProbeE = false, err.Error()
			} else {
				r.Probe = p
				r.OK = r.OK && p.OK
			}
			var st control.Status
			if err := call(c, "GET", "/v1/status", nil, &st); err != nil {
				r.NodeE = err.Error()
			} else {
				r.Node = &st
				for _, h := range st.Helpers {
					r.OK = r.OK && h.State == "running"
				}
			}
			if c.Bool("json") {
				if err := printJSON(r); err != nil {
					return err
				}
			} else {
				printDoctor(r)
			}
			if !r.OK {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}

// runProbe runs the sandbox probe through anet-sandboxd, the program that owns the sandbox.
func runProbe() (*probeAnswer, error) {
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
	var p probeAnswer
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

func mark(ok bool) string {
	if ok {
		return "ok  "
	}
	return "FAIL"
}

func printDoctor(r doctorReport) {
	fmt.Println("host:")
	for _, h := range r.Host {
		printCheck(h)
	}
	fmt.Println("sandbox probe:")
	switch {
	case r.Probe != nil:
		for _, ch := range r.Probe.Checks {
			fmt.Printf("  %s %s: %s\n", mark(ch.OK), ch.Name, ch.Detail)
		}
		if !r.Probe.OK {
			fmt.Printf("  sandbox unavailable: %s: %s %s\n", r.Probe.Code, reasons.Text(r.Probe.Code), r.Probe.Detail)
		}
		fmt.Printf("  limits: %s\n", r.Probe.Limits)
		for _, w := range r.Probe.Warnings {
			fmt.Printf("  warning %s: %s\n", w, reasons.Text(w))
		}
	default:
		fmt.Printf("  FAIL %s\n", r.ProbeE)
	}
	fmt.Println("node:")
	if r.Node == nil {
		fmt.Printf("  not running (%s)\n", r.NodeE)
	} else {
		for _, h := range r.Node.Helpers {
			fmt.Printf("  %s %s: %s (pid %d, restarts %d)\n", mark(h.State == "running"), h.Name, h.State, h.PID, h.Restarts)
		}
		for _, w := range r.Node.Warnings {
			fmt.Printf("  warning %s: %s %s\n", w.Code, w.Text, w.Detail)
		}
	}
	if r.OK {
		fmt.Println("all checks passed")
	}
}

func printCheck(h doctor.Check) {
	line := fmt.Sprintf("  %s %s: %s", mark(h.OK), h.Name, h.Detail)
	if h.Code != "" {
		line += fmt.Sprintf(" [%s]", h.Code)
	}
	fmt.Println(line)
	if h.Fix != "" {
		fmt.Printf("       fix: %s\n", h.Fix)
	}
}
