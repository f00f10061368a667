// Package launch is the process-starting side of the sandbox seam, linked only by
// anet-sandboxd: the Launcher that implements sandbox.Launcher for serve, exec, probe and
// self-test; the registry of isolation backends; direct (unsandboxed, P4) runs; the one watch
// loop every run has; and the self-test (probe plus attack battery).
//
// A backend is one isolation technology (bwrap on Linux; a macOS Seatbelt and a micro-VM
// backend slot in the same way). Adding one is a package that implements Backend and calls
// Register from its init function, and one blank import in anet-sandboxd's backends file for
// its platform. The Launcher does the rest for every backend alike: it picks direct or
// sandboxed by the spec's mode, refuses a sandboxed run without a passing probe (cached per
// backend configuration, S7), and tracks every run so StopAll can end them. On a platform with
// no backend the Launcher still starts direct runs, and its probe reports
// platform_unsupported (O1): untrusted tasks are refused sandbox_unavailable.
package launch

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/sandbox"
)

// Backend is one isolation technology.
type Backend interface {
	// Probe runs the S7 checks now, in a sandbox built exactly like a run's.
	Probe(ctx context.Context) (sandbox.ProbeResult, error)
	// ConfigHash identifies the configuration a probe result holds for (binary, rendered
	// arguments, filters, limits mechanism); any change of it invalidates the cache.
	ConfigHash() (string, error)
	// Start starts a sandboxed run of a prepared plan, without looking at the probe: the
	// Launcher gates. Its run is stopped through a Watch.
	Start(ctx context.Context, p *Plan, stdio sandbox.Stdio) (Run, error)
}

// SelfTester is a Backend with a self-test of its own, run by SelfTest after the probe in
// place of the attack battery (which is Linux's): its checks are reported as attack.NAME.
type SelfTester interface {
	SelfTest(ctx context.Context, o SelfTestOptions) ([]check.Check, error)
}

// Probed is a backend that can fold the probe into a run, so a launch with no passing probe
// cached still builds one sandbox (S7, P2): StartProbed starts p's run, whose own init runs
// the probe's checks in the run's sandbox before the agent, and returns once they have been
// judged. With a passing result and release, the run's agent has been released and the run is
// returned; otherwise the run has ended without its agent ever starting, and no run is
// returned. A backend without it is probed in a sandbox of its own first.
type Probed interface {
	StartProbed(ctx context.Context, p *Plan, stdio sandbox.Stdio, release bool) (Run, sandbox.ProbeResult)
}

// Limited is a backend that knows, before any run, whether its runs get the cgroup limits
// (S6): what a passing probe of it would say.
type Limited interface {
	Limits() sandbox.CgroupLimits
}

// Run is a started run of a backend or a direct run.
type Run interface {
	sandbox.Run
	// Kill ends every process of the run now, without the grace period (StopAll).
	Kill()
}

// Settler is a run that removes what it made on the host (its dirs, its cgroups) after Wait
// has returned the outcome: once every process of the run is gone nothing of it can act, so
// the answer need not wait on the file system. Settled is closed when all of it is removed.
// A run that is not a Settler is settled when Wait returns.
type Settler interface {
	Settled() <-chan struct{}
}

// WaitSettled returns once r has ended (Wait) and is settled (Settler): what a caller waits
// for before it removes the run root, or exits (S3: no run dir outlives its launcher).
func WaitSettled(r sandbox.Run) {
	r.Wait()
	if s, ok := r.(Settler); ok {
		<-s.Settled()
	}
}

// Options are what every backend is built with.
type Options struct {
	// Backend names the backend; "" is the first one registered for this platform.
	Backend string
	// Self is the anet-sandboxd binary (a backend may run it inside the sandbox as pid 1);
	// "" is os.Executable().
	Self string
	// Log receives one line per launch; nil discards.
	Log *slog.Logger
	// ProbeCacheDir, when set, keeps passing probe results on disk for the next process
	// (a private directory no sandbox sees: the node's runtime directory).
	ProbeCacheDir string
	// CacheDir is where a backend keeps what it prepares once and reuses (the vm backend's
	// guest kernel and initramfs); "" for none, which such a backend refuses.
	CacheDir string
	// AllowEmulation lets a backend fall back to emulating hardware the host lacks (the vm
	// backend's software CPU when KVM is unusable): slow, so only when the operator asks.
	AllowEmulation bool
}

// Factory builds a backend.
type Factory func(Options) (Backend, error)

var (
	registryMu sync.Mutex // guards the registry
	registry   []registered
)

type registered struct {
	name string
	new  Factory
}

// Register adds a backend under name. Backends register from their package's init function,
// in the order of preference of the platform's backends file; a duplicate name panics.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, r := range registry {
		if r.name == name {
			panic("launch: backend " + name + " registered twice")
		}
	}
	registry = append(registry, registered{name, f})
}

// Backends returns the names of the registered backends, preferred first.
func Backends() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	return names()
}

func names() []string {
	var out []string
	for _, r := range registry {
		out = append(out, r.name)
	}
	return out
}

// factory returns the factory for name ("" the preferred one), or nil when none is registered.
func factory(name string) (string, Factory, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" {
		if len(registry) == 0 {
			return "", nil, nil
		}
		return registry[0].name, registry[0].new, nil
	}
	i := slices.IndexFunc(registry, func(r registered) bool { return r.name == name })
	if i < 0 {
		return "", nil, fmt.Errorf("no sandbox backend %q in this build (have %v)", name, names())
	}
	return registry[i].name, registry[i].new, nil
}

// ProbeAdopter is a backend that keeps what its passing probe chose (the vm backend's
// accelerator). A cached result may have been probed by another process (S7: the cache
// outlives the process on disk), so the Launcher hands every cached pass to the backend before
// it vouches for it; an error means this process cannot use that result, and the probe runs
// afresh.
type ProbeAdopter interface {
	AdoptProbe(sandbox.ProbeResult) error
}
