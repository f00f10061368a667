package launch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
)

// ProbeCommand is the subcommand the probe runs inside the sandbox: `anet-sandboxd probe
// --inside --targets JSON`.
const ProbeCommand = "probe"

// StartFunc starts a sandboxed run exactly as a backend starts an agent's, without the probe
// gate: the probe's own run.
type StartFunc func(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (Run, error)

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
	relayPort := 47000 + int(randUint16()%2000)
	targets.HostPort, targets.Abstract, targets.RelayPort = can.tcpPort, can.abstract, relayPort
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
	var stdout, stderr bytes.Buffer
	run, err := start(ctx, spec, sandbox.Stdio{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return fail(sandbox.CodeOf(err), err.Error())
	}
	out := run.Wait()
	res.Limits = out.Cgroup
	if out.Err != nil {
		return fail(sandbox.CodeOf(out.Err), out.Err.Error())
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res.Checks); err != nil || len(res.Checks) == 0 {
		return fail(reasons.SandboxStartFailed, fmt.Sprintf("probe output unreadable (exit %d): %s", out.ExitCode, LastLine(stderr.String())))
	}
	if n := can.tcpHits.Load(); n > 0 {
		res.Checks = append(res.Checks, check.Fail("host_tcp_canary", "S2", reasons.NetnsFailed,
			fmt.Sprintf("the host canary listener accepted %d connection(s) from the sandbox", n)))
	}
	res.OK = true
	for i, c := range res.Checks {
		if !c.OK {
			// The code is the host's verdict, whatever the sandbox side wrote.
			c.Code = attack.ProbeCheckCode(c.Name)
			res.Checks[i] = c
			res.OK = false
			if res.Code == "" {
				res.Code = c.Code
				res.Detail = c.Name + ": " + c.Detail
			}
		}
	}
	if res.Limits != sandbox.CgroupFull && !slices.Contains(res.Warnings, reasons.NoCgroupLimits) {
		res.Warnings = append(res.Warnings, reasons.NoCgroupLimits)
	}
	return res, nil
}

type canaries struct {
	dir      string
	tcp      net.Listener
	tcpPort  int
	tcpHits  atomic.Int64
	abs      net.Listener
	abstract string
	ep       net.Listener
	endpoint string
}

func openCanaries() (*canaries, error) {
	dir, err := ShortTempDir("anet-probe-")
	if err != nil {
		return nil, err
	}
	c := &canaries{dir: dir}
	if c.tcp, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		c.close()
		return nil, fmt.Errorf("tcp canary: %w", err)
	}
	c.tcpPort = c.tcp.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			conn, err := c.tcp.Accept()
			if err != nil {
				return
			}
			c.tcpHits.Add(1)
			conn.Close()
		}
	}()
	c.abstract = RandomName("anet-probe-", 12)
	if c.abs, err = net.Listen("unix", "@"+c.abstract); err != nil {
		c.close()
		return nil, fmt.Errorf("abstract canary: %w", err)
	}
	go DrainListener(c.abs)
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
	for _, ln := range []net.Listener{c.tcp, c.abs, c.ep} {
		if ln != nil {
			ln.Close()
		}
	}
	_ = linksafe.RemovePath(c.dir)
}

func randUint16() uint16 {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return uint16(b[0])<<8 | uint16(b[1])
}
