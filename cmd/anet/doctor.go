package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/agents"
	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/config"
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
		Usage: "check the host and the node as its helpers see them: bubblewrap, user namespaces, the sandbox probe, limits, agent, key, model, disk",
		Flags: []cli.Flag{
			jsonFlag,
			&cli.BoolFlag{Name: "apparmor-profile", Usage: "print the AppArmor profile for bwrap (writes no file)"},
			&cli.BoolFlag{Name: "prove", Usage: "prove the wall now: the running anetd runs both helpers' self-tests and signs the result into the evidence chain"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("apparmor-profile") {
				_, err := fmt.Fprint(os.Stdout, doctor.AppArmorProfile)
				return err
			}
			if c.Bool("prove") {
				return proveWall(c)
			}
			r := runDoctor(c)
			var err error
			if c.Bool("json") {
				err = printJSON(r)
			} else {
				// The probe's details quote bwrap; the node's answers may quote an agent (U1).
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

// runDoctor checks the host (host.NAME), the configuration as anetd --check does
// (config.NAME), the sandbox probe (probe.NAME) and the node (node.NAME) as the running
// anetd's helpers see them, or, with no anetd running, as they would: each helper run here
// the way anetd runs it.
func runDoctor(c *cli.Context) doctor.Report {
	var r doctor.Report
	r.Add(check.Prefixed("host", doctor.System.HostChecks())...)
	paths, cfg, cc := doctor.ConfigChecks(c.Context, preflight.Options{Env: os.Getenv, ConfigPath: c.String("config")})
	r.Add(check.Prefixed("config", cc)...)
	if paths.RuntimeDir == "" { // the config could not be read: the default places
		paths, _ = config.DefaultPaths(os.Getenv)
	}
	var view control.DoctorView
	if err := call(c, "GET", "/v1/doctor", nil, &view); err == nil {
		r.Source = "the running anetd's helpers (anetd pid " + strconv.Itoa(view.PID) + ")"
		var st control.Status
		if err := call(c, "GET", "/v1/status", nil, &st); err != nil {
			r.NodeError = err.Error()
		} else {
			r.Node = &st
		}
	} else {
		r.NodeError = err.Error()
		r.Source = "anetd is not running: the helpers run here as anetd runs them (same PATH and environment); the agent is looked up on this shell's PATH"
		view = localView(c.Context, paths, cfg)
	}
	spec, _ := agents.Lookup(string(cfg.AutoReply.Agent))
	bw, _ := exec.LookPath("bwrap")
	r.Add(doctor.NodeChecks(view, doctor.Setup{
		Config: cfg, Paths: paths, AgentBinary: spec.Binary, AgentInstall: spec.Install,
		AgentVersion: doctor.AgentVersion, BwrapOnPATH: bw,
		LimitsFix: sandbox.LimitsFix(sandbox.ThisCgroupHost(os.Getenv)), FreeBytes: doctor.FreeBytes,
	})...)
	if p, err := doctor.ProbeOf(view); err == nil {
		r.Limits, r.Mechanism, r.Warnings = p.Limits, p.Mechanism, p.Warnings
	}
	if r.Node != nil {
		r.Add(doctor.HelperChecks(r.Node.Helpers)...)
		r.Add(doctor.WallCheck(r.Node.Wall))
	}
	return r
}

// proveWall is `anet doctor --prove`: the running anetd proves the wall now (S7, S8) and
// answers the proof it signed into the chain; it is printed in the check shape, and the exit
// status is the proof's.
func proveWall(c *cli.Context) error {
	var p control.WallProof
	if err := call(c, "POST", "/v1/wall/prove", struct{}{}, &p); err != nil {
		return cannotRun(err)
	}
	if c.Bool("json") {
		if err := printJSON(p); err != nil {
			return err
		}
	} else if err := printWallProof(os.Stdout, p); err != nil {
		return err
	}
	rep := check.New(p.Items...)
	return cli.Exit("", rep.ExitCode())
}

// printWallProof writes a proof as the check reports are written, with where and why it was
// made; its details quote the helpers' programs and the sandbox (U1).
func printWallProof(w io.Writer, p control.WallProof) error {
	termsafe.Walk(&p, termsafe.Line)
	rep := check.New(p.Items...)
	return rep.WriteText(w, wallNote(p))
}

// wallNote is the proof's line: when, why, the tier and its entry in the chain.
func wallNote(p control.WallProof) string {
	n := fmt.Sprintf("wall: %s %s (%s, tier %s", wallVerdict(p), p.At.Local().Format(time.DateTime+" MST"), p.Why, p.Tier)
	if p.Seq > 0 {
		n += ", evidence entry " + strconv.FormatInt(p.Seq, 10)
	}
	return n + ")"
}

func wallVerdict(p control.WallProof) string {
	if p.OK {
		return "proved"
	}
	return "NOT proved"
}

// localView is what the helpers would answer anetd, found without anetd: the probe of
// anet-sandboxd run with the helpers' environment, the agent on this shell's PATH (anetd
// started here would inherit it), anet-egress's check of the keys file and of a run.
func localView(ctx context.Context, p config.Paths, c config.Config) control.DoctorView {
	var v control.DoctorView
	if raw, err := runProbe(ctx, c.AutoReply.Sandbox.LauncherArgs(p)); err != nil {
		v.ProbeError = err.Error()
	} else {
		v.Probe = raw
	}
	if spec, ok := agents.Lookup(string(c.AutoReply.Agent)); !ok {
		v.AgentError = "unknown agent"
	} else if prog, err := exec.LookPath(spec.Binary); err != nil {
		v.AgentError = err.Error()
	} else {
		v.AgentPath, _ = filepath.Abs(prog)
	}
	q := preflight.QueryFor(c.AutoReply)
	a, err := preflight.HelperCheck(ctx, "", p.KeysFile, preflight.ModelsFile(p), &q)
	if err != nil {
		v.Keys = preflight.KeysVerdict{Code: reasons.Internal, Message: err.Error()}
		return v
	}
	v.Keys, v.Run = a.Keys, a.Run
	return v
}

// runProbe runs the sandbox probe through anet-sandboxd, the program that owns the sandbox,
// with the environment anetd starts it with and the tier flags of the config (V1): what it
// finds on its own PATH is what the running node would find.
func runProbe(ctx context.Context, tier []string) (json.RawMessage, error) {
	// The same search as anetd's: beside anet in a build tree, ../libexec/anet in a package.
	dir, err := helperpath.ForThisProgram("")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, helperpath.Sandboxd)
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"probe", "--json"}, tier...)...)
	cmd.Env = helperpath.Env()
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
	return out.Bytes(), nil
}

// doctorNotes are the lines beside the checks: whose view the node's checks are, the limits
// mechanism, and the node's warnings that no check has said already (each reason once).
func doctorNotes(r doctor.Report) []string {
	notes := []string{"node: " + r.Source}
	if r.Limits != "" {
		l := "limits: " + string(r.Limits)
		if r.Mechanism != "" {
			l += " (" + r.Mechanism + ")"
		}
		notes = append(notes, l)
	}
	said := map[reasons.Code]bool{}
	for _, c := range r.Checks {
		said[c.Code] = true
	}
	for _, w := range r.Warnings {
		if !said[w] {
			notes = append(notes, fmt.Sprintf("warning %s: %s", w, reasons.Text(w)))
			said[w] = true
		}
	}
	if r.Node != nil {
		for _, w := range r.Node.Warnings {
			if code := reasons.Code(w.Code); !said[code] {
				notes = append(notes, fmt.Sprintf("warning %s: %s %s", w.Code, w.Text, reasons.Dedup(code, w.Detail)))
				said[code] = true
			}
		}
	}
	return notes
}
