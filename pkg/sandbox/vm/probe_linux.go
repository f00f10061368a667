package vm

import (
	"context"
	"fmt"
	"os"
	"strings"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
)

// Probe check names the VM tier adds to S7's five (they describe, they do not attack).
const (
	CheckAccel     = sandbox.CheckVMAccel
	CheckTransport = sandbox.CheckVMTransport
	CheckKernel    = sandbox.CheckVMKernel
)

// Probe implements sandbox.Launcher: cached five minutes per configuration, like the bwrap
// tier's.
func (l *Launcher) Probe(ctx context.Context) (sandbox.ProbeResult, error) {
	hash, err := l.ConfigHash(ctx)
	if err != nil {
		return bwrap.Failed(sandbox.CodeOf(err), err.Error()), nil
	}
	return l.cache.Get(ctx, hash, l.ProbeUncached)
}

// ConfigHash identifies the configuration: the wall's own hash, QEMU, the guest files, the
// accelerator policy.
func (l *Launcher) ConfigHash(ctx context.Context) (string, error) {
	wall, err := l.cfg.Wall.ConfigHash()
	if err != nil {
		return "", err
	}
	qemu, err := l.qemuPath()
	if err != nil {
		return "", err
	}
	g, err := l.prepare(ctx)
	if err != nil {
		return "", err
	}
	return sandbox.ConfigHash([]byte(wall), []byte(qemu), []byte(g.kernel.Key), []byte(g.initramfs),
		[]byte(l.cfg.Accel), []byte(fmt.Sprint(l.cfg.AllowTCG, l.cfg.CPUs))), nil
}

// ProbeUncached runs the probe now: the bwrap wall's own probe first (QEMU runs in that
// wall), then S7's five checks and the VM's two (no network device but lo, no host process
// visible) inside a guest, under each allowed accelerator in turn until one boots.
func (l *Launcher) ProbeUncached(ctx context.Context) (sandbox.ProbeResult, error) {
	wall, err := l.cfg.Wall.Probe(ctx)
	if err != nil {
		return bwrap.Failed(sandbox.CodeOf(err), err.Error()), nil
	}
	if !wall.OK {
		wall.Detail = "the bwrap wall QEMU runs in: " + wall.Detail
		return wall, nil
	}
	if _, err := l.qemuPath(); err != nil {
		return bwrap.Failed(sandbox.CodeOf(err), err.Error()), nil
	}
	g, err := l.prepare(ctx)
	if err != nil {
		return bwrap.Failed(sandbox.CodeOf(err), err.Error()), nil
	}
	cands, err := l.accelCandidates()
	if err != nil {
		return bwrap.Failed(sandbox.CodeOf(err), err.Error()), nil
	}
	start, err := bwrap.ProcessStart(os.Getpid())
	if err != nil {
		return bwrap.Failed(reasons.SandboxStartFailed, err.Error()), nil
	}
	targets := bwrap.ProbeTargets{VM: true, HostPID: os.Getpid(), HostStart: start}
	var tried []string
	var res sandbox.ProbeResult
	for _, a := range cands {
		res, err = bwrap.RunProbe(ctx, func(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (sandbox.Run, error) {
			return l.startWith(ctx, spec, stdio, a)
		}, targets, wall.Warnings)
		if err != nil {
			return res, err
		}
		if res.OK {
			l.mu.Lock()
			l.accel = a
			l.mu.Unlock()
			detail := string(a)
			if len(tried) > 0 {
				detail += " (" + strings.Join(tried, "; ") + ")"
			}
			res.Checks = append(res.Checks,
				sandbox.Check{Name: CheckAccel, OK: true, Detail: detail},
				sandbox.Check{Name: CheckTransport, OK: true, Detail: string(l.Transport())},
				sandbox.Check{Name: CheckKernel, OK: true, Detail: g.kernel.Version + " from " + g.kernel.Package})
			return res, nil
		}
		tried = append(tried, fmt.Sprintf("%s: %s: %s", a, res.Code, res.Detail))
	}
	res.Detail = strings.Join(tried, "; ")
	return res, nil
}

// SelfTest runs the probe and the attack battery inside a guest (as an agent would meet it).
func (l *Launcher) SelfTest(ctx context.Context, o bwrap.SelfTestOptions) (bwrap.SelfTestResult, error) {
	return bwrap.RunSelfTest(ctx, l.ProbeUncached, l.start, o)
}
