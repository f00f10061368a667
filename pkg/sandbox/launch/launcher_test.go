//go:build linux

package launch

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// This package's tests link no backend: the registry is empty unless a test registers one,
// which is exactly a platform without a sandbox (O1).

func newLauncher(t *testing.T, o Options) *Launcher {
	t.Helper()
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.StopAll)
	return l
}

func directSpec(t *testing.T, id string, argv ...string) sandbox.Spec {
	return sandbox.Spec{ID: id, Mode: sandbox.ModeDirect, Argv: argv, RunRoot: t.TempDir(), WorkRoot: t.TempDir(), WorkSub: "aid/" + id}
}

// TestDirectRun: direct mode (P4) runs unsandboxed in <work root>/<aid>/<interaction> with
// the same wall clock as a sandboxed run (S6).
func TestDirectRun(t *testing.T) {
	l := newLauncher(t, Options{})
	root := t.TempDir()
	// The launcher's own environment (a key, a proxy) never reaches the agent (S5, F3); the
	// operator's home stays its home (P4).
	t.Setenv("ANET_TEST_SECRET", "sk-launcher-secret")
	home, _ := os.UserHomeDir()
	spec := sandbox.Spec{ID: "d1", Mode: sandbox.ModeDirect,
		Argv:    []string{"/bin/sh", "-c", `pwd; echo $ANET_X; echo "$HOME"; echo "${ANET_TEST_SECRET-unset}"; exit 3`},
		RunRoot: t.TempDir(), WorkRoot: root, WorkSub: "aid/i1", Env: []string{"ANET_X=hello"}}
	var out bytes.Buffer
	run, err := l.Start(context.Background(), spec, sandbox.Stdio{Stdout: &out})
	if err != nil {
		t.Fatalf("Start(direct) = %v", err)
	}
	o := run.Wait()
	work := filepath.Join(root, "aid", "i1")
	if real, err := filepath.EvalSymlinks(root); err == nil {
		work = filepath.Join(real, "aid", "i1")
	}
	want := work + "\nhello\n" + home + "\nunset\n"
	if o.ExitCode != 3 || out.String() != want || o.Limit != "" {
		t.Fatalf("direct run = exit %d limit %q output %q, want 3, none, %q", o.ExitCode, o.Limit, out.String(), want)
	}
}

// The one watch loop: past the wall clock a run gets TERM, and KILL after the grace period
// when it ignores TERM (S6).
func TestDirectWallClock(t *testing.T) {
	l := newLauncher(t, Options{})
	spec := directSpec(t, "d2", "/bin/sh", "-c", "trap '' TERM; sleep 600 & wait; sleep 600")
	spec.Limits = sandbox.Limits{WallClock: time.Second, Grace: 500 * time.Millisecond}
	run, err := l.Start(context.Background(), spec, sandbox.Stdio{})
	if err != nil {
		t.Fatalf("Start(direct) = %v", err)
	}
	o := run.Wait()
	if o.Limit != sandbox.LimitWallClock || o.Signal != 9 {
		t.Fatalf("direct run past its wall clock = limit %q signal %d, want wall_clock and SIGKILL after grace", o.Limit, o.Signal)
	}
}

// Ending the caller's context stops the run politely: TERM reaches it, no limit is recorded.
func TestCancelStopsRun(t *testing.T) {
	l := newLauncher(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	spec := directSpec(t, "d4", "/bin/sh", "-c", "echo started; exec sleep 600")
	var out testkit.Buffer
	run, err := l.Start(ctx, spec, sandbox.Stdio{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the run started", func() bool { return strings.Contains(out.String(), "started") })
	cancel()
	if o := run.Wait(); o.Signal != int(syscall.SIGTERM) || o.Limit != "" {
		t.Fatalf("cancelled run = %+v, want ended by SIGTERM with no limit", o)
	}
}

func TestDirectRefusesLinkedWorkDir(t *testing.T) {
	l := newLauncher(t, Options{})
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "aid")); err != nil {
		t.Fatal(err)
	}
	spec := sandbox.Spec{ID: "d3", Mode: sandbox.ModeDirect, Argv: []string{"/bin/true"}, RunRoot: t.TempDir(), WorkRoot: root, WorkSub: "aid/i1"}
	_, err := l.Start(context.Background(), spec, sandbox.Stdio{})
	if !errors.Is(err, linksafe.ErrSymlink) || !strings.Contains(err.Error(), "aid") {
		t.Fatalf("Start(direct) with a linked aid dir = %v, want ErrSymlink", err)
	}
}

// O1, F1: with no backend for the platform the probe says platform_unsupported, a sandboxed
// run is refused with that code and nothing starts; direct runs still work.
func TestNoBackend(t *testing.T) {
	l := newLauncher(t, Options{})
	if l.BackendName() != "" {
		t.Fatalf("backend = %q in a build without one", l.BackendName())
	}
	res, err := l.Probe(context.Background())
	if err != nil || res.OK || res.Code != reasons.PlatformUnsupport || res.Report().ExitCode() != check.ExitFailed {
		t.Fatalf("Probe = %+v, %v; want a failed probe with platform_unsupported", res, err)
	}
	if len(res.Checks) != 1 || res.Checks[0].Code != reasons.PlatformUnsupport {
		t.Fatalf("probe checks = %+v, want one failed check naming platform_unsupported", res.Checks)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	spec := sandbox.Spec{ID: "s1", Mode: sandbox.ModeSandbox, Argv: []string{"/bin/sh", "-c", "touch " + marker}, RunRoot: t.TempDir()}
	_, err = l.Start(context.Background(), spec, sandbox.Stdio{})
	if sandbox.CodeOf(err) != reasons.PlatformUnsupport {
		t.Fatalf("Start(sandbox) without a backend = %v, want platform_unsupported", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a sandboxed run started although there is no sandbox")
	}
	run, err := l.Start(context.Background(), directSpec(t, "d5", "/bin/true"), sandbox.Stdio{})
	if err != nil || run.Wait().ExitCode != 0 {
		t.Fatalf("direct run without a backend = %v", err)
	}
}

// StopAll ends every run at once and returns when they are gone (serve on EOF or SIGTERM).
func TestStopAll(t *testing.T) {
	l := newLauncher(t, Options{})
	n := strconv.Itoa(500000 + int(time.Now().UnixNano()%400000))
	var runs []sandbox.Run
	for i := range 2 {
		r, err := l.Start(context.Background(), directSpec(t, "sa"+strconv.Itoa(i), "/bin/sh", "-c", "trap '' TERM; sleep "+n), sandbox.Stdio{})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	done := make(chan struct{})
	go func() { l.StopAll(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("StopAll did not return")
	}
	for _, r := range runs {
		if o := r.Wait(); o.Signal != int(syscall.SIGKILL) {
			t.Errorf("run after StopAll = %+v, want killed", o)
		}
	}
	// The launcher forgets a run once it has ended.
	testkit.WaitFor(t, "no run tracked after StopAll", func() bool { return l.running() == 0 })
}

// testBackend is a backend whose "sandbox" is a direct run: it tests the Launcher's gate and
// cache, not isolation (pkg/sandbox/bwrap's tests do that with real bwrap).
type testBackend struct {
	probeOK bool
	probes  atomic.Int32
	starts  atomic.Int32
}

func (b *testBackend) Probe(context.Context) (sandbox.ProbeResult, error) {
	b.probes.Add(1)
	if !b.probeOK {
		return sandbox.ProbeFailed(reasons.NetnsFailed, "host_tcp: reachable"), nil
	}
	return sandbox.ProbeResult{OK: true, Limits: sandbox.CgroupFull, Checks: []check.Check{check.Pass("loopback", "S7", "")}}, nil
}

func (b *testBackend) ConfigHash() (string, error) { return "h", nil }

func (b *testBackend) Start(ctx context.Context, p *Plan, stdio sandbox.Stdio) (Run, error) {
	b.starts.Add(1)
	spec := p.Spec()
	spec.Mode, spec.WorkRoot, spec.WorkSub = sandbox.ModeDirect, spec.RunRoot, "w"
	dp, err := Prepare(spec)
	if err != nil {
		return nil, err
	}
	return startDirect(ctx, dp, stdio)
}

func registerTestBackend(t *testing.T, name string, b Backend) {
	t.Helper()
	Register(name, func(Options) (Backend, error) { return b, nil })
	t.Cleanup(func() {
		registryMu.Lock()
		defer registryMu.Unlock()
		registry = registry[:len(registry)-1]
	})
}

// S7: a sandboxed run never starts without a passing probe; a passing probe is cached per
// configuration, a failing one is not.
func TestProbeGate(t *testing.T) {
	b := &testBackend{}
	registerTestBackend(t, "test", b)
	l := newLauncher(t, Options{})
	if l.BackendName() != "test" {
		t.Fatalf("backend = %q, want the registered one", l.BackendName())
	}
	spec := sandbox.Spec{ID: "g1", Mode: sandbox.ModeSandbox, Argv: []string{"/bin/true"}, RunRoot: t.TempDir()}
	for range 2 {
		if _, err := l.Start(context.Background(), spec, sandbox.Stdio{}); sandbox.CodeOf(err) != reasons.NetnsFailed {
			t.Fatalf("Start with a failing probe = %v, want netns_failed", err)
		}
	}
	if b.starts.Load() != 0 || b.probes.Load() != 2 {
		t.Fatalf("failing probe: %d starts, %d probes; want 0 and 2 (failures are not cached)", b.starts.Load(), b.probes.Load())
	}
	b.probeOK = true
	for i := range 2 {
		spec.ID = "g" + strconv.Itoa(i+2)
		r, err := l.Start(context.Background(), spec, sandbox.Stdio{})
		if err != nil {
			t.Fatalf("Start with a passing probe = %v", err)
		}
		r.Wait()
	}
	if b.starts.Load() != 2 || b.probes.Load() != 3 {
		t.Fatalf("passing probe: %d starts, %d probes; want 2 and 3 (the pass is cached)", b.starts.Load(), b.probes.Load())
	}
}

// limitedBackend knows its limits mechanism without a run (Limited).
type limitedBackend struct {
	*testBackend
	lim sandbox.CgroupLimits
}

func (b limitedBackend) Limits() sandbox.CgroupLimits { return b.lim }

// S6, S7: Limits answers without a sandbox of its own when it can: from a kept probe, else
// from a backend that knows (Limited); only a backend that cannot say is probed; and a
// failed probe says nothing ("").
func TestLimitsWithoutAProbe(t *testing.T) {
	lb := limitedBackend{&testBackend{probeOK: true}, sandbox.CgroupNone}
	Register("limited", func(Options) (Backend, error) { return lb, nil })
	t.Cleanup(func() {
		registryMu.Lock()
		defer registryMu.Unlock()
		registry = registry[:len(registry)-1]
	})
	l := newLauncher(t, Options{})
	if got := l.Limits(context.Background()); got != sandbox.CgroupNone || lb.probes.Load() != 0 {
		t.Fatalf("Limited backend: Limits = %q after %d probes; want none and no probe", got, lb.probes.Load())
	}

	b := &testBackend{}
	registerTestBackend(t, "test", b)
	l = newLauncher(t, Options{Backend: "test"})
	if got := l.Limits(context.Background()); got != "" || b.probes.Load() != 1 {
		t.Fatalf("failing probe: Limits = %q after %d probes; want \"\" after one", got, b.probes.Load())
	}
	b.probeOK = true
	if got := l.Limits(context.Background()); got != sandbox.CgroupFull || b.probes.Load() != 2 {
		t.Fatalf("passing probe: Limits = %q after %d probes; want the probe's (full) after two", got, b.probes.Load())
	}
	if got := l.Limits(context.Background()); got != sandbox.CgroupFull || b.probes.Load() != 2 {
		t.Fatalf("with a pass kept: Limits = %q after %d probes; want full and no new probe", got, b.probes.Load())
	}
}

func TestRegistry(t *testing.T) {
	registerTestBackend(t, "first", &testBackend{})
	registerTestBackend(t, "second", &testBackend{})
	if got := strings.Join(Backends(), ","); got != "first,second" {
		t.Fatalf("Backends() = %s, want first,second", got)
	}
	if l := newLauncher(t, Options{Backend: "second"}); l.BackendName() != "second" {
		t.Fatalf("New(second) uses %q", l.BackendName())
	}
	if _, err := New(Options{Backend: "vm"}); err == nil || !strings.Contains(err.Error(), `"vm"`) {
		t.Fatalf("New with a backend not in the build = %v, want an error naming it", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a name twice did not panic")
		}
	}()
	Register("first", nil)
}

// P2: an anet-sandboxd whose launcher could not be set up starts nothing, direct runs
// included, and its probe says why.
func TestUnavailable(t *testing.T) {
	u := Unavailable{Err: errors.New("no own binary")}
	if res, _ := u.Probe(context.Background()); res.OK || res.Code != reasons.SandboxUnavailable {
		t.Fatalf("Probe = %+v, want sandbox_unavailable", res)
	}
	if _, err := u.Start(context.Background(), directSpec(t, "u1", "/bin/true"), sandbox.Stdio{}); sandbox.CodeOf(err) != reasons.SandboxUnavailable {
		t.Fatalf("Start = %v, want sandbox_unavailable", err)
	}
}

func (l *Launcher) running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs)
}

// adoptingBackend keeps state from its probe, as the vm backend keeps its accelerator.
type adoptingBackend struct {
	testBackend
	adopted  atomic.Int32
	adoptErr error
}

func (b *adoptingBackend) AdoptProbe(res sandbox.ProbeResult) error {
	b.adopted.Add(1)
	return b.adoptErr
}

// S7: a pass cached on disk by another process is handed to a backend that keeps state from
// its probe; one it cannot use is dropped and the probe runs afresh.
func TestCachedProbeIsAdoptedS7(t *testing.T) {
	b := &adoptingBackend{testBackend: testBackend{probeOK: true}}
	registerTestBackend(t, "adopting", b)
	dir := filepath.Join(t.TempDir(), "probe")
	ctx := context.Background()
	if res, _ := newLauncher(t, Options{ProbeCacheDir: dir}).Probe(ctx); !res.OK || res.Cached || b.probes.Load() != 1 || b.adopted.Load() != 0 {
		t.Fatalf("first probe %+v: %d probes, %d adopted; want one fresh probe", res, b.probes.Load(), b.adopted.Load())
	}
	if res, _ := newLauncher(t, Options{ProbeCacheDir: dir}).Probe(ctx); !res.OK || !res.Cached || b.probes.Load() != 1 || b.adopted.Load() != 1 {
		t.Fatalf("next process %+v: %d probes, %d adopted; want the cached pass adopted", res, b.probes.Load(), b.adopted.Load())
	}
	b.adoptErr = errors.New("accelerator not allowed here")
	if res, _ := newLauncher(t, Options{ProbeCacheDir: dir}).Probe(ctx); !res.OK || res.Cached || b.probes.Load() != 2 {
		t.Fatalf("unusable cached pass %+v: %d probes; want a fresh probe", res, b.probes.Load())
	}
}

// S7, S6: Start and Limits trust a cached pass only once the backend has adopted it, as
// Probe does; one the backend cannot use is dropped and the start probes afresh.
func TestStartAdoptsTheCachedPassS7(t *testing.T) {
	b := &adoptingBackend{testBackend: testBackend{probeOK: true}}
	Register("adopting-start", func(Options) (Backend, error) { return b, nil })
	t.Cleanup(func() {
		registryMu.Lock()
		defer registryMu.Unlock()
		registry = registry[:len(registry)-1]
	})
	dir := filepath.Join(t.TempDir(), "probe")
	ctx := context.Background()
	if res, _ := newLauncher(t, Options{Backend: "adopting-start", ProbeCacheDir: dir}).Probe(ctx); !res.OK || b.probes.Load() != 1 {
		t.Fatalf("first probe %+v after %d probes", res, b.probes.Load())
	}
	spec := sandbox.Spec{ID: "a1", Mode: sandbox.ModeSandbox, Argv: []string{"/bin/true"}, RunRoot: t.TempDir()}
	next := newLauncher(t, Options{Backend: "adopting-start", ProbeCacheDir: dir})
	r, err := next.Start(ctx, spec, sandbox.Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait()
	if b.probes.Load() != 1 || b.adopted.Load() != 1 || b.starts.Load() != 1 {
		t.Fatalf("Start with a pass cached by another process: %d probes, %d adopted, %d starts; want 1, 1, 1", b.probes.Load(), b.adopted.Load(), b.starts.Load())
	}
	b.adoptErr = errors.New("accelerator not allowed here")
	if lim := newLauncher(t, Options{Backend: "adopting-start", ProbeCacheDir: dir}).Limits(ctx); lim != sandbox.CgroupFull || b.probes.Load() != 2 {
		t.Fatalf("Limits with an unusable cached pass = %q after %d probes; want a fresh probe's full", lim, b.probes.Load())
	}
}

// S7, M1: a failed check before a run drops the cached pass on disk too, so the next process
// probes afresh rather than trusting what this one just found wanting.
func TestFailedCheckDropsTheDiskCacheM1(t *testing.T) {
	b := &selfTestingBackend{testBackend: testBackend{probeOK: true}}
	registerTestBackend(t, "checking-disk", b)
	dir := filepath.Join(t.TempDir(), "probe")
	l := newLauncher(t, Options{ProbeCacheDir: dir})
	b.startErr = reasons.New(reasons.SelfCheckFailed, "decoy_port: connected")
	spec := sandbox.Spec{ID: "d1", Mode: sandbox.ModeSandbox, Argv: []string{"/bin/true"}, RunRoot: t.TempDir()}
	if _, err := l.Start(context.Background(), spec, sandbox.Stdio{}); sandbox.CodeOf(err) != reasons.SelfCheckFailed {
		t.Fatalf("Start = %v, want selfcheck_failed", err)
	}
	if res, _ := newLauncher(t, Options{ProbeCacheDir: dir}).Probe(context.Background()); res.Cached || b.probes.Load() != 2 {
		t.Fatalf("next process %+v after %d probes: want a fresh probe, not the dropped pass", res, b.probes.Load())
	}
}
