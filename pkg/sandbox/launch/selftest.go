package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
)

// SelfTestOptions shape the self-test run.
type SelfTestOptions struct {
	// RunRoot holds the run's home and tmp; "" uses a temporary dir.
	RunRoot string
	// Plant is a host dir where the canary secrets are planted (an operator's ~/.ssh/id_rsa,
	// a control token, a data dir); "" uses a new dir under $HOME, removed afterwards.
	Plant string
	// RuntimeDir holds the host socket canary; "" uses $XDG_RUNTIME_DIR or the temp dir.
	RuntimeDir string
	// Names limits the battery; empty runs all.
	Names  []string
	Limits sandbox.Limits
}

// SelfTestReport is `anet-sandboxd self-test`: the shared check shape (pkg/check) with the
// probe's limits mechanism beside it.
type SelfTestReport struct {
	check.Report
	Limits   sandbox.CgroupLimits `json:"limits"`
	Warnings []reasons.Code       `json:"warnings,omitempty"`
}

// SelfTest runs the probe and the attack battery against this host through l, the same
// Launcher serve uses (S7, S8). It opens and removes its own canaries. The report's checks
// are the probe's (probe.NAME) and one per attack of the battery (attack.NAME); it passes
// only if the probe passes and every attack is blocked for the right reason. An error means
// the self-test could not be set up at all.
func SelfTest(ctx context.Context, l *Launcher, o SelfTestOptions) (SelfTestReport, error) {
	var res SelfTestReport
	probe, err := l.Probe(ctx)
	if err != nil {
		return res, fmt.Errorf("self-test: %w", err)
	}
	res.Limits, res.Warnings = probe.Limits, probe.Warnings
	res.Add(check.Prefixed("probe", probe.Checks)...)
	if st, ok := l.backend.(SelfTester); ok {
		checks, err := st.SelfTest(ctx, o)
		if err != nil {
			return res, fmt.Errorf("self-test: %w", err)
		}
		if len(checks) == 0 {
			checks = []check.Check{check.Fail("battery", "S8", "", "the backend's self-test reported nothing")}
		}
		res.Add(check.Prefixed("attack", checks)...)
		return res, nil
	}
	env, cleanup, err := plantCanaries(o)
	if err != nil {
		return res, fmt.Errorf("self-test: %w", err)
	}
	defer cleanup()
	if o.RunRoot == "" {
		d, err := os.MkdirTemp("", "anet-selftest-run-")
		if err != nil {
			return res, fmt.Errorf("self-test: %w", err)
		}
		defer linksafe.RemovePath(d)
		o.RunRoot = d
	}
	names := o.Names
	if len(names) == 0 {
		names = attack.Names()
	}
	lim := o.Limits
	if lim.WallClock == 0 {
		lim.WallClock = 2 * time.Minute
	}
	spec := sandbox.Spec{
		ID: RandomName("selftest-", 6), Mode: sandbox.ModeSandbox,
		Argv:    append([]string{sandbox.SandboxSelf, attack.Command, "--json"}, names...),
		RunRoot: o.RunRoot, Env: env.Environ(), Limits: lim,
	}
	var stdout, stderr bytes.Buffer
	// The probe ran just above and may have failed: the battery runs anyway, to show what is
	// open.
	run, err := l.startSandboxed(ctx, spec, sandbox.Stdio{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		res.Add(check.Fail("attack.battery", "S8", sandbox.CodeOf(err), "the battery did not start: "+err.Error()))
		return res, nil
	}
	defer WaitSettled(run) // before the run root is removed
	out := run.Wait()
	var battery check.Report
	if out.Err == nil {
		err = json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &battery)
	}
	got := map[string]check.Check{}
	for _, c := range battery.Checks {
		got[c.Name] = c
	}
	// One check per attack asked for: an attack the battery did not report fails.
	for _, n := range names {
		c, ok := got[n]
		if !ok {
			c = check.Fail(n, attack.Requirement(n), "", fmt.Sprintf("no result from the battery (exit %d): %s", out.ExitCode, batteryTrouble(out, err, stderr.String())))
		}
		res.Add(check.Prefixed("attack", []check.Check{c})...)
	}
	return res, nil
}

// batteryTrouble says why the battery's output is missing or unreadable.
func batteryTrouble(out sandbox.Outcome, parseErr error, stderr string) string {
	switch {
	case out.Err != nil:
		return out.Err.Error()
	case parseErr != nil:
		return "output unreadable: " + parseErr.Error()
	}
	return sandbox.LastLine(stderr)
}
