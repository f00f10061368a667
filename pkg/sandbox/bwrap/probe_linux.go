package bwrap

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/gate"
	"anet.dev/anet/pkg/sandbox/launch"
)

// ConfigHash implements launch.Backend. It identifies the sandbox configuration: bwrap, the
// rendered argv template, the seccomp programs and the limits mechanism. A change of any of
// them invalidates the probe cache.
func (l *Backend) ConfigHash() (string, error) {
	bw, err := l.bwrapPath()
	if err != nil {
		return "", err
	}
	initBin, err := l.initPath()
	if err != nil {
		return "", err
	}
	progs, err := l.cfg.Filters()
	if err != nil {
		return "", reasons.New(reasons.SeccompFailed, err.Error())
	}
	spec := sandbox.Spec{ID: "x", Mode: sandbox.ModeSandbox, Argv: []string{"/x"}, RunRoot: "/r", Endpoint: "/e", Port: 1}
	p, err := launch.NewPlan(spec, launch.HostPaths{Prog: "/x", Endpoint: "/e"})
	if err != nil {
		return "", err
	}
	lay := Layout{SystemDirs: launch.HostSystemDirs(), Home: "/h", Tmp: "/t", Work: "/w", Init: initBin, Self: l.cfg.Self,
		SeccompFDs: []int{3, 4}, EnvFD: 5, StatusFD: 6, HoldFD: 7, Hostname: l.cfg.Hostname, Unsafe: l.unsafe}
	args, err := Args(p, lay)
	if err != nil {
		return "", err
	}
	// The mechanism's dirs too: a kept probe names the subtree its runs were limited in.
	parts := [][]byte{[]byte(bw), []byte(strings.Join(args, "\x00")), []byte(l.mech.Mode),
		[]byte(strings.Join([]string{l.mech.V2, l.mech.Memory, l.mech.Pids}, "\x00"))}
	parts = append(parts, progs...)
	return sandbox.ConfigHash(parts...), nil
}

// StartProbed implements launch.Probed: p's run, whose init runs the probe's checks (S7)
// in the run's own sandbox before the agent; the agent starts only when they passed and
// release is true (P2). A failing probe ends the run before its agent ever started, and
// returns no run. Either way the result is the probe's.
func (l *Backend) StartProbed(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio, release bool) (launch.Run, sandbox.ProbeResult) {
	var warn []reasons.Code
	if l.mech.Mode == LimitsNone {
		warn = append(warn, reasons.NoCgroupLimits)
	}
	failed := func(code reasons.Code, detail string) (launch.Run, sandbox.ProbeResult) {
		res := sandbox.ProbeFailed(code, detail)
		res.Warnings = warn
		return nil, res
	}
	g, err := gate.Open(p.Spec().Port)
	if err != nil {
		return failed(reasons.SandboxStartFailed, err.Error())
	}
	defer g.Close()
	r, err := l.start(ctx, p, stdio, Wall{}, g)
	if err != nil {
		return failed(sandbox.CodeOf(err), err.Error())
	}
	// A run not returned is settled before StartProbed returns: no caller can wait for it,
	// and the probe's caller removes the run root next.
	end := func() sandbox.Outcome {
		launch.WaitSettled(r)
		return r.Wait()
	}
	checks, err := g.Await(ctx, r.Done())
	if err != nil {
		r.Kill()
		out := end()
		if out.Err != nil {
			return failed(sandbox.CodeOf(out.Err), out.Err.Error())
		}
		// The run ended before init reported: bwrap's own last words say why, as for a run
		// that is not probed (a refused user namespace, a network namespace that failed).
		last := sandbox.LastLine(r.stderr.String())
		return failed(startReason(last), fmt.Sprintf("%v (exit %d): %s", err, out.ExitCode, last))
	}
	res := g.Judge(checks)
	res.Limits, res.Warnings = r.cgroup, warn
	res.Mechanism, res.MechanismDetail = l.mech.Mode.Words(), l.mech.Detail
	if res.Limits != sandbox.CgroupFull {
		res.Mechanism = LimitsNone.Words()
	}
	if res.Limits != sandbox.CgroupFull && !slices.Contains(res.Warnings, reasons.NoCgroupLimits) {
		res.Warnings = append(res.Warnings, reasons.NoCgroupLimits)
	}
	if res.OK && release {
		if err := g.Release(); err != nil {
			r.Kill()
			end()
			return failed(reasons.SandboxStartFailed, err.Error())
		}
		return r, res
	}
	g.Refuse()
	if !res.OK {
		r.Kill()
	}
	end()
	return nil, res
}

// probePort is the loopback port the probe's run relays to its endpoint, as runs are given
// one (any port of the run's own namespace would do).
const probePort = 8080

// Probe implements launch.Backend: the S7 checks, run now by the init of a run built exactly
// like an agent's, whose agent is never started.
func (l *Backend) Probe(ctx context.Context) (sandbox.ProbeResult, error) {
	dir, err := launch.ShortTempDir("anet-probe-")
	if err != nil {
		return sandbox.ProbeResult{}, fmt.Errorf("probe: %w", err)
	}
	defer linksafe.RemovePath(dir)
	// A run has an endpoint; the probe's answers nothing (the checks use the gate's streams).
	ep, err := net.Listen("unix", filepath.Join(dir, "endpoint.sock"))
	if err != nil {
		return sandbox.ProbeResult{}, fmt.Errorf("probe: endpoint: %w", err)
	}
	defer ep.Close()
	go launch.DrainListener(ep)
	spec := sandbox.Spec{
		ID: launch.RandomName("probe-", 6), Mode: sandbox.ModeSandbox,
		Argv:     []string{sandbox.SandboxInit}, // never started
		RunRoot:  dir,
		Endpoint: ep.Addr().String(), Port: probePort,
		Limits: sandbox.Limits{WallClock: gate.Timeout, Grace: time.Second},
	}
	p, err := launch.Prepare(spec)
	if err != nil {
		return sandbox.ProbeFailed(sandbox.CodeOf(err), err.Error()), nil
	}
	_, res := l.StartProbed(ctx, p, sandbox.Stdio{}, false)
	return res, nil
}
