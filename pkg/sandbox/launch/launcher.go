package launch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// Launcher is anet-sandboxd's sandbox.Launcher: direct runs itself, sandboxed runs through the
// backend, behind a cached probe.
type Launcher struct {
	name    string  // the backend's name, "" for none
	backend Backend // nil: this platform has none
	log     *slog.Logger
	cache   sandbox.ProbeCache

	mu   sync.Mutex            // guards runs
	runs map[Run]chan struct{} // every run until it is settled; its channel is closed then
}

var _ sandbox.Launcher = (*Launcher)(nil)

// New returns the Launcher with the backend o names (or the platform's preferred one). With
// no backend registered it still starts direct runs and probes platform_unsupported. It fails
// only when the named backend is not in this build or cannot be set up.
func New(o Options) (*Launcher, error) {
	o.Log = LogOrDiscard(o.Log)
	self, err := ResolveSelf(o.Self)
	if err != nil {
		return nil, fmt.Errorf("new launcher: %w", err)
	}
	o.Self = self
	go learnPidfd()
	l := &Launcher{log: o.Log, runs: map[Run]chan struct{}{}}
	name, f, err := factory(o.Backend)
	if err != nil {
		return nil, fmt.Errorf("new launcher: %w", err)
	}
	if f != nil {
		b, err := f(o)
		if err != nil {
			return nil, fmt.Errorf("new launcher: %s: %w", name, err)
		}
		l.name, l.backend = name, b
	}
	if o.ProbeCacheDir != "" {
		l.cache.Dir, l.cache.Stamp = o.ProbeCacheDir, probeStamp(name, o.Self, l.backend)
	}
	return l, nil
}

// learnPidfd has the os package learn, once per process, whether pidfds work: it forks and
// reaps a throw-away child to find out, on the first start of a process, which a launcher
// makes next. Learnt now, that fork overlaps the run's preparation instead of preceding
// bwrap's (anet-sandboxd exec is a new process per command). Nothing else changes: os uses
// pidfds when they work, as before.
func learnPidfd() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Release()
	}
}

// probeStamp identifies what a probe result depends on beyond the configuration hash: the
// backend (a bwrap result must never stand for the vm backend's, V1), this binary (it runs the
// probe's checks and the self-test inside), the backend's programs (Binaries: bwrap,
// anet-runinit, QEMU) and the kernel.
func probeStamp(backend, self string, b Backend) string {
	parts := []string{backend, sandbox.FileStamp(self)}
	if bb, ok := b.(interface{ Binaries() []string }); ok {
		for _, p := range bb.Binaries() {
			parts = append(parts, sandbox.FileStamp(p))
		}
	}
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	parts = append(parts, strings.TrimSpace(string(rel)))
	return strings.Join(parts, "\x00")
}

// BackendName is the backend in use, "" when the platform has none.
func (l *Launcher) BackendName() string { return l.name }

// Probe implements sandbox.Launcher: the backend's probe, cached per configuration for
// sandbox.ProbeTTL when it passes.
func (l *Launcher) Probe(ctx context.Context) (sandbox.ProbeResult, error) {
	if l.backend == nil {
		return noBackend(), nil
	}
	hash, err := l.backend.ConfigHash()
	if err != nil {
		return sandbox.ProbeFailed(sandbox.CodeOf(err), err.Error()), nil
	}
	res, err := l.cache.Get(ctx, hash, l.backend.Probe)
	if err != nil || !res.OK || !res.Cached {
		return res, err
	}
	if !l.adopt(res) {
		return l.cache.Get(ctx, hash, l.backend.Probe)
	}
	return res, nil
}

// adopt hands a cached pass to a backend that keeps what its probe chose (ProbeAdopter) and
// reports whether this process may use it; one it cannot use is dropped from the cache.
func (l *Launcher) adopt(res sandbox.ProbeResult) bool {
	a, ok := l.backend.(ProbeAdopter)
	if !ok {
		return true
	}
	if err := a.AdoptProbe(res); err != nil {
		l.log.Info("cached probe result not usable here; probing again", "backend", l.name, "reason", err)
		l.cache.Drop()
		return false
	}
	return true
}

// cachedPass is the kept passing probe of hash this process can use (adopt), if any.
func (l *Launcher) cachedPass(hash string) (sandbox.ProbeResult, bool) {
	r, ok := l.cache.Cached(hash)
	if !ok || !l.adopt(r) {
		return sandbox.ProbeResult{}, false
	}
	return r, true
}

func noBackend() sandbox.ProbeResult {
	return sandbox.ProbeFailed(reasons.PlatformUnsupport, "no sandbox backend for "+runtime.GOOS+"/"+runtime.GOARCH+" in this build")
}

// Limits says whether a sandboxed run started now gets the cgroup limits (S6), building no
// sandbox when it can: a kept passing probe's answer, else the backend's own (Limited), else
// a probe's. "" when it cannot be known: no backend, or a failed probe (a start then refuses
// with its reason).
func (l *Launcher) Limits(ctx context.Context) sandbox.CgroupLimits {
	if l.backend == nil {
		return ""
	}
	hash, err := l.backend.ConfigHash()
	if err != nil {
		return ""
	}
	if r, ok := l.cachedPass(hash); ok {
		return r.Limits
	}
	if b, ok := l.backend.(Limited); ok {
		return b.Limits()
	}
	if r, err := l.Probe(ctx); err == nil && r.OK {
		return r.Limits
	}
	return ""
}

// Start implements sandbox.Launcher. A direct run (P4) starts here; a sandboxed run starts
// only after a passing probe (S7): a cached one, or else the probe's checks run by the run's
// own init before its agent when the backend can (Probed), or a probe of its own first. A
// failed probe is returned as its *reasons.Error and no agent starts.
func (l *Launcher) Start(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (sandbox.Run, error) {
	p, err := Prepare(spec)
	if err != nil {
		return nil, err
	}
	return l.StartPlan(ctx, p, stdio)
}

// StartPlan is Start for a plan its caller has prepared (exec, which tells a usage error from
// a refusal by Prepare's error).
func (l *Launcher) StartPlan(ctx context.Context, p *Plan, stdio sandbox.Stdio) (sandbox.Run, error) {
	if p.Spec().Mode == sandbox.ModeDirect {
		return l.track(startDirect(ctx, p, stdio))
	}
	if l.backend == nil {
		return nil, noBackend().Err()
	}
	hash, err := l.backend.ConfigHash()
	if err != nil {
		return nil, sandbox.ProbeFailed(sandbox.CodeOf(err), err.Error()).Err()
	}
	if _, ok := l.cachedPass(hash); ok {
		return l.startBackend(ctx, p, stdio)
	}
	if pb, ok := l.backend.(Probed); ok {
		r, res := pb.StartProbed(ctx, p, stdio, true)
		if res = l.cache.Record(hash, res); !res.OK {
			return nil, res.Err()
		}
		return l.track(r, nil)
	}
	res, err := l.Probe(ctx)
	if err != nil {
		return nil, err
	}
	if !res.OK {
		return nil, res.Err()
	}
	return l.startBackend(ctx, p, stdio)
}

// startSandboxed starts a sandboxed run without the probe gate: self-test's battery, which
// must show what is open even when the probe failed.
func (l *Launcher) startSandboxed(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (sandbox.Run, error) {
	if spec.Mode != sandbox.ModeSandbox {
		return nil, fmt.Errorf("start %s: mode %q is not sandboxed", spec.ID, spec.Mode)
	}
	p, err := Prepare(spec)
	if err != nil {
		return nil, err
	}
	if l.backend == nil {
		return nil, noBackend().Err()
	}
	return l.startBackend(ctx, p, stdio)
}

// startBackend starts a prepared sandboxed plan on the backend.
func (l *Launcher) startBackend(ctx context.Context, p *Plan, stdio sandbox.Stdio) (sandbox.Run, error) {
	r, err := l.backend.Start(ctx, p, stdio)
	if sandbox.CodeOf(err) == reasons.SelfCheckFailed {
		// The backend's own check before the run failed (M1): a cached pass no longer holds.
		l.cache.Drop()
	}
	return l.track(r, err)
}

// track remembers r until it has ended and is settled, for StopAll and Settle.
func (l *Launcher) track(r Run, err error) (sandbox.Run, error) {
	if err != nil {
		return nil, err
	}
	gone := make(chan struct{})
	l.mu.Lock()
	l.runs[r] = gone
	l.mu.Unlock()
	go func() {
		WaitSettled(r)
		l.mu.Lock()
		delete(l.runs, r)
		l.mu.Unlock()
		close(gone)
	}()
	return r, nil
}

// StopAll implements sandbox.Launcher: every run is killed at once (serve on SIGTERM or EOF
// of fd 3: anetd is gone, so nobody waits for an answer) and StopAll returns when all are gone
// and settled (Settle).
func (l *Launcher) StopAll() {
	l.mu.Lock()
	runs := make([]Run, 0, len(l.runs))
	for r := range l.runs {
		runs = append(runs, r)
	}
	l.mu.Unlock()
	for _, r := range runs {
		r.Kill()
	}
	l.Settle()
}

// Settle returns once every run started through l has ended and is settled (Settler), runs
// started meanwhile included. A process calls it before it exits: a run's answer does not
// wait for the removal of its dirs and cgroups, but none of them may outlive the process (S3).
func (l *Launcher) Settle() {
	for {
		l.mu.Lock()
		gone := make([]chan struct{}, 0, len(l.runs))
		for _, c := range l.runs {
			gone = append(gone, c)
		}
		l.mu.Unlock()
		if len(gone) == 0 {
			return
		}
		for _, c := range gone {
			<-c
		}
	}
}

// Unavailable is the launcher of an anet-sandboxd whose Launcher could not be set up: it
// starts nothing, direct runs included (P2, fail closed), and its probe says why.
type Unavailable struct{ Err error }

var _ sandbox.Launcher = Unavailable{}

// Probe implements sandbox.Launcher.
func (u Unavailable) Probe(context.Context) (sandbox.ProbeResult, error) {
	return sandbox.ProbeFailed(reasons.SandboxUnavailable, u.Err.Error()), nil
}

// Start implements sandbox.Launcher: it always refuses.
func (u Unavailable) Start(context.Context, sandbox.Spec, sandbox.Stdio) (sandbox.Run, error) {
	return nil, reasons.New(reasons.SandboxUnavailable, u.Err.Error())
}

// StartPlan is Start: it always refuses.
func (u Unavailable) StartPlan(context.Context, *Plan, sandbox.Stdio) (sandbox.Run, error) {
	return nil, reasons.New(reasons.SandboxUnavailable, u.Err.Error())
}

// StopAll implements sandbox.Launcher: there is nothing to stop.
func (Unavailable) StopAll() {}

// Settle is Launcher.Settle: nothing started, nothing to settle.
func (Unavailable) Settle() {}
