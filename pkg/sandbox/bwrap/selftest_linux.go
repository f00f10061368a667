package bwrap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
)

// AttackCommand is the hidden subcommand that runs the battery inside a sandbox.
const AttackCommand = "attack"

// SelfTestResult is `anet-sandboxd self-test`'s report: the probe and every attack.
type SelfTestResult struct {
	OK      bool                `json:"ok"`
	Probe   sandbox.ProbeResult `json:"probe"`
	Attacks []attack.Result     `json:"attacks"`
	// Detail explains a battery that could not run at all.
	Detail string `json:"detail,omitempty"`
}

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

// SelfTest runs the probe and the attack battery against this host (C4). It
// opens and removes its own canaries; OK is true only if the probe passes and every attack
// is blocked for the right reason.
func (l *Launcher) SelfTest(ctx context.Context, o SelfTestOptions) (SelfTestResult, error) {
	var res SelfTestResult
	probe, err := l.ProbeUncached(ctx)
	if err != nil {
		return res, fmt.Errorf("self-test: %w", err)
	}
	res.Probe = probe
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
		defer sandbox.RemovePath(d)
		o.RunRoot = d
	}
	names := o.Names
	if len(names) == 0 {
		names = []string{"all"}
	}
	lim := o.Limits
	if lim.WallClock == 0 {
		lim.WallClock = 2 * time.Minute
	}
	spec := sandbox.Spec{
		ID: "selftest-" + randHex(6), Mode: sandbox.ModeSandbox,
		Argv:    append([]string{sandbox.SandboxSelf, AttackCommand, "--json"}, names...),
		RunRoot: o.RunRoot, Env: env.Environ(), Limits: lim,
	}
	var stdout, stderr bytes.Buffer
	// The probe ran just above (and may have failed: the battery still shows what is open).
	run, err := l.start(ctx, spec, sandbox.Stdio{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		res.Detail = "battery did not start: " + err.Error()
		return res, nil
	}
	out := run.Wait()
	if out.Err != nil {
		res.Detail = "battery did not run: " + out.Err.Error()
		return res, nil
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r attack.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err == nil && r.Name != "" {
			res.Attacks = append(res.Attacks, r)
		}
	}
	want := len(names)
	if names[0] == "all" {
		want = len(attack.Names())
	}
	if len(res.Attacks) != want {
		res.Detail = fmt.Sprintf("battery reported %d of %d results (exit %d): %s", len(res.Attacks), want, out.ExitCode, lastLine(stderr.String()))
		return res, nil
	}
	res.OK = probe.OK
	for _, r := range res.Attacks {
		if !r.Blocked {
			res.OK = false
		}
	}
	return res, nil
}

// plantCanaries opens the host-side targets of the battery and returns the Env that points
// at them, and a function that closes and removes them all.
func plantCanaries(o SelfTestOptions) (attack.Env, func(), error) {
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (attack.Env, func(), error) {
		cleanup()
		return attack.Env{}, nil, err
	}
	env, err := attack.Env{}.WithHostFacts()
	if err != nil {
		return fail(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(fmt.Errorf("tcp canary: %w", err))
	}
	closers = append(closers, func() { tcp.Close() })
	go acceptClose(tcp)
	env.HostTCPPort = tcp.Addr().(*net.TCPAddr).Port

	env.AbstractName = "anet-selftest-" + randHex(12)
	abs, err := net.Listen("unix", "@"+env.AbstractName)
	if err != nil {
		return fail(fmt.Errorf("abstract canary: %w", err))
	}
	closers = append(closers, func() { abs.Close() })
	go acceptClose(abs)

	rt := o.RuntimeDir
	if rt == "" {
		rt = os.Getenv("XDG_RUNTIME_DIR")
	}
	if rt == "" {
		rt = os.TempDir()
	}
	env.RuntimeSocket = filepath.Join(rt, "anet-selftest-"+randHex(6)+".sock")
	rs, err := net.Listen("unix", env.RuntimeSocket)
	if err != nil {
		return fail(fmt.Errorf("runtime socket canary: %w", err))
	}
	closers = append(closers, func() { rs.Close(); os.Remove(env.RuntimeSocket) })
	go acceptClose(rs)

	plant := o.Plant
	if plant == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fail(fmt.Errorf("plant canaries: %w", err))
		}
		if plant, err = os.MkdirTemp(home, ".anet-selftest-"); err != nil {
			return fail(fmt.Errorf("plant canaries: %w", err))
		}
		p := plant
		closers = append(closers, func() { _ = sandbox.RemovePath(p) })
	}
	env.SSHKeyPath = filepath.Join(plant, ".ssh", "id_rsa")
	env.ControlTokenPath = filepath.Join(plant, "run", "anet", "control.token")
	env.DataDir = filepath.Join(plant, "data", "anet")
	for _, f := range []string{env.SSHKeyPath, env.ControlTokenPath, filepath.Join(env.DataDir, "store.db")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return fail(fmt.Errorf("plant canaries: %w", err))
		}
		if err := os.WriteFile(f, []byte("anet self-test canary; not a secret\n"), 0o600); err != nil {
			return fail(fmt.Errorf("plant canaries: %w", err))
		}
	}
	return env, cleanup, nil
}
