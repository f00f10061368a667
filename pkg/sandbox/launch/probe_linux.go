package launch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/sandbox/gate"
)

// ProbeCommand is the subcommand the probe runs inside the sandbox: `anet-sandboxd probe
// --inside --targets JSON`.
const ProbeCommand = "probe"

// StartFunc starts a sandboxed run exactly as a backend starts an agent's, without the probe
// gate: the probe's own run.
type StartFunc func(ctx context.Context, p *Plan, stdio sandbox.Stdio) (Run, error)

// RunProbe is a backend's probe (S7): the checks of targets (the five S7 properties; a
// backend may ask for more, as the vm backend does) run now in a run that start makes. The
// host opens the canaries (a TCP listener on its loopback, an abstract socket with a random
// name, an echo endpoint) and closes them after. warnings are the backend's own (e.g.
// no_cgroup_limits); the host's verdict sets every failed check's code.
func RunProbe(ctx context.Context, start StartFunc, targets attack.ProbeTargets, warnings []reasons.Code) (sandbox.ProbeResult, error) {
	res := sandbox.ProbeResult{At: time.Now(), Limits: sandbox.CgroupNone, Warnings: warnings}
	can, err := openCanaries()
	if err != nil {
		return res, fmt.Errorf("probe: %w", err)
	}
	defer can.close()
	relayPort := gate.RelayPort(0)
	can.Aim(&targets)
	targets.RelayPort = relayPort
	tj, _ := json.Marshal(targets)

	id := RandomName("probe-", 6)
	spec := sandbox.Spec{
		ID: id, Mode: sandbox.ModeSandbox,
		Argv:     []string{sandbox.SandboxSelf, ProbeCommand, "--inside", "--targets", string(tj)},
		RunRoot:  can.dir,
		Endpoint: can.endpoint, Port: relayPort,
		Limits: sandbox.Limits{WallClock: 30 * time.Second, Grace: time.Second},
	}
	fail := func(code reasons.Code, detail string) (sandbox.ProbeResult, error) {
		r := sandbox.ProbeFailed(code, detail)
		r.Warnings = res.Warnings
		return r, nil
	}
	p, err := Prepare(spec)
	if err != nil {
		return fail(sandbox.CodeOf(err), err.Error())
	}
	var stdout, stderr bytes.Buffer
	run, err := start(ctx, p, sandbox.Stdio{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return fail(sandbox.CodeOf(err), err.Error())
	}
	defer WaitSettled(run) // before the canaries' close removes the run root
	out := run.Wait()
	res.Limits = out.Cgroup
	if out.Err != nil {
		return fail(sandbox.CodeOf(out.Err), out.Err.Error())
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res.Checks); err != nil || len(res.Checks) == 0 {
		return fail(reasons.SandboxStartFailed, fmt.Sprintf("probe output unreadable (exit %d): %s", out.ExitCode, sandbox.LastLine(stderr.String())))
	}
	// The verdict is the host's, whatever the sandbox side wrote.
	v := can.Judge(res.Checks, attack.ProbeCheckNames(targets))
	res.Checks, res.OK, res.Code, res.Detail = v.Checks, v.OK, v.Code, v.Detail
	if res.Limits != sandbox.CgroupFull && !slices.Contains(res.Warnings, reasons.NoCgroupLimits) {
		res.Warnings = append(res.Warnings, reasons.NoCgroupLimits)
	}
	return res, nil
}

// canaries are the host checks' (gate.Canaries) and the probe run's own dir and echo endpoint.
type canaries struct {
	*gate.Canaries
	dir      string
	ep       net.Listener
	endpoint string
}

func openCanaries() (*canaries, error) {
	dir, err := ShortTempDir("anet-probe-")
	if err != nil {
		return nil, err
	}
	c := &canaries{dir: dir}
	if c.Canaries, err = gate.OpenCanaries(); err != nil {
		c.close()
		return nil, err
	}
	c.endpoint = filepath.Join(dir, "endpoint.sock")
	if c.ep, err = net.Listen("unix", c.endpoint); err != nil {
		c.close()
		return nil, fmt.Errorf("probe endpoint: %w", err)
	}
	go func() {
		for {
			conn, err := c.ep.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				line, err := bufio.NewReader(conn).ReadString('\n')
				if err == nil {
					conn.Write([]byte(line))
				}
			}()
		}
	}()
	return c, nil
}

// ShortTempDir makes a 0700 temp dir whose path leaves room for a socket name (sun_path
// holds 108 bytes): $XDG_RUNTIME_DIR, then the temp dir, then /tmp.
func ShortTempDir(prefix string) (string, error) {
	var last error
	for _, base := range []string{os.Getenv("XDG_RUNTIME_DIR"), os.TempDir(), "/tmp"} {
		if base == "" || len(base)+len(prefix)+40 > 100 {
			continue
		}
		d, err := os.MkdirTemp(base, prefix)
		if err == nil {
			return d, nil
		}
		last = err
	}
	if last == nil {
		last = fmt.Errorf("no temp dir short enough for a unix socket path")
	}
	return "", fmt.Errorf("probe dir: %w", last)
}

func (c *canaries) close() {
	if c.Canaries != nil {
		c.Canaries.Close()
	}
	if c.ep != nil {
		c.ep.Close()
	}
	_ = linksafe.RemovePath(c.dir)
}
