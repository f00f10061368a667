package vm

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/sandbox/launch"
)

// Probe check names the backend adds to S7's five (they describe, they do not attack).
const (
	CheckAccel     = sandbox.CheckVMAccel
	CheckTransport = sandbox.CheckVMTransport
	CheckKernel    = sandbox.CheckVMKernel
)

// ConfigHash implements launch.Backend: the wall's own hash, QEMU, the guest files and the
// accelerator policy. Preparing the guest files (extracting the kernel at first use) is part
// of it, so a kernel that cannot be found is reported here with its code.
func (l *Backend) ConfigHash() (string, error) {
	wall, err := l.cfg.Wall.ConfigHash()
	if err != nil {
		return "", err
	}
	qemu, err := l.qemuPath()
	if err != nil {
		return "", err
	}
	g, err := l.prepare(context.Background())
	if err != nil {
		return "", err
	}
	return sandbox.ConfigHash([]byte(wall), []byte(qemu), []byte(g.kernel.Key), []byte(g.initramfs),
		[]byte(l.cfg.Accel), []byte(fmt.Sprint(l.cfg.AllowTCG, l.cfg.CPUs))), nil
}

// Probe implements launch.Backend: the bwrap wall's own probe first (QEMU runs in that
// wall), then S7's five checks and the VM's two (no network device but lo, no host process
// visible) inside a guest, under each allowed accelerator in turn until one boots. The one
// that boots is what later runs use.
func (l *Backend) Probe(ctx context.Context) (sandbox.ProbeResult, error) {
	wall, err := l.cfg.Wall.Probe(ctx)
	if err != nil {
		return sandbox.ProbeFailed(sandbox.CodeOf(err), err.Error()), nil
	}
	if !wall.OK {
		wall.Detail = "the bwrap wall QEMU runs in: " + wall.Detail
		return wall, nil
	}
	if _, err := l.qemuPath(); err != nil {
		return sandbox.ProbeFailed(sandbox.CodeOf(err), err.Error()), nil
	}
	g, err := l.prepare(ctx)
	if err != nil {
		return sandbox.ProbeFailed(sandbox.CodeOf(err), err.Error()), nil
	}
	cands, err := l.accelCandidates()
	if err != nil {
		return sandbox.ProbeFailed(sandbox.CodeOf(err), err.Error()), nil
	}
	start, err := attack.ProcessStart(os.Getpid())
	if err != nil {
		return sandbox.ProbeFailed(reasons.SandboxStartFailed, err.Error()), nil
	}
	targets := attack.ProbeTargets{VM: true, HostPID: os.Getpid(), HostStart: start}
	var tried []string
	var res sandbox.ProbeResult
	for _, a := range cands {
		res, err = launch.RunProbe(ctx, func(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio) (launch.Run, error) {
			return l.startWith(ctx, p, stdio, a)
		}, targets, wall.Warnings)
		if err != nil {
			return res, err
		}
		if res.OK {
			l.mu.Lock()
			l.accel = a
			l.mu.Unlock()
			// The agent's limits are its cgroup inside the guest (QEMU's wall has its own).
			res.Mechanism = "vm guest cgroup"
			detail := string(a)
			if len(tried) > 0 {
				detail += " (" + strings.Join(tried, "; ") + ")"
			}
			res.Checks = append(res.Checks,
				check.Pass(CheckAccel, "V1", detail),
				check.Pass(CheckTransport, "V1", string(transportFor(a))),
				check.Pass(CheckKernel, "V1", g.kernel.Version+" from "+g.kernel.Package))
			return res, nil
		}
		tried = append(tried, fmt.Sprintf("%s: %s: %s", a, res.Code, res.Detail))
	}
	res.Detail = strings.Join(tried, "; ")
	return res, nil
}

// AdoptProbe implements launch.ProbeAdopter: a passing result cached by another process (S7)
// carries the accelerator its probe booted a guest with; this process starts its guests with
// the same one, if its own configuration still allows it (V1). Anything else is an error and
// the Launcher probes again.
func (l *Backend) AdoptProbe(res sandbox.ProbeResult) error {
	var accel Accel
	var transport Transport
	for _, c := range res.Checks {
		if !c.OK {
			continue
		}
		switch c.Name {
		case CheckAccel:
			if f := strings.Fields(c.Detail); len(f) > 0 {
				accel = Accel(f[0])
			}
		case CheckTransport:
			transport = Transport(c.Detail)
		}
	}
	if accel == "" {
		return fmt.Errorf("the cached probe result names no accelerator")
	}
	// The link is chosen from the host (vhost-vsock), which may have changed since: a probe
	// vouches only for the link its guest booted with.
	if now := transportFor(accel); transport != now {
		return fmt.Errorf("the cached probe booted its guest over %q, this host would use %s", transport, now)
	}
	cands, err := l.accelCandidates()
	if err != nil {
		return err
	}
	if !slices.Contains(cands, accel) {
		return fmt.Errorf("the cached probe chose %s, which this configuration does not allow (%v)", accel, cands)
	}
	l.mu.Lock()
	l.accel = accel
	l.mu.Unlock()
	return nil
}

var _ launch.ProbeAdopter = (*Backend)(nil)

// Binaries names what a probe result depends on besides anet-sandboxd: the wall's programs
// (bwrap, anet-runinit) and QEMU, so a cached result is not reused once one is replaced (S7).
func (l *Backend) Binaries() []string {
	out := l.cfg.Wall.Binaries()
	if q, err := l.qemuPath(); err == nil {
		out = append(out, q)
	}
	return out
}
