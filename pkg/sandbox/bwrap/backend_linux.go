package bwrap

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"anet.dev/anet/pkg/helperpath"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// Name is the backend's name in pkg/sandbox/launch's registry.
const Name = "bwrap"

func init() {
	launch.Register(Name, func(o launch.Options) (launch.Backend, error) {
		return New(Config{Self: o.Self, Log: o.Log})
	})
}

// Config configures the Linux backend. Zero fields take defaults.
type Config struct {
	// Bwrap is the bubblewrap binary; "" looks up "bwrap" in PATH.
	Bwrap string
	// Self is the anet-sandboxd binary (bound into a run only when it is the run's program:
	// self-test's attack battery); "" uses os.Executable().
	Self string
	// Init is the run's pid 1, anet-runinit, bound into every run; "" is helperpath.RunInit
	// beside Self.
	Init string
	// Hostname is the runs' hostname; "" is launch.RunHostname.
	Hostname string
	// Filters returns the seccomp programs; nil uses pkg/sandbox/seccomp.
	Filters func() ([][]byte, error)
	// Limits overrides the detected mechanism (tests); nil detects it and sets it up
	// (SetUpLimits).
	Limits *Mechanism
	// Log receives one line per launch; nil discards.
	Log *slog.Logger
}

// Backend is the bwrap isolation backend (launch.Backend): pkg/sandbox/launch gates its runs
// on the probe, caches the probe and tracks the runs.
type Backend struct {
	cfg    Config
	mech   Mechanism
	unsafe Weakening
}

var _ launch.Backend = (*Backend)(nil)

// New returns the backend. It fails only on an unusable Self; a missing bwrap is reported by
// Probe and Start as no_bwrap so the caller can show it.
func New(cfg Config) (*Backend, error) {
	self, err := launch.ResolveSelf(cfg.Self)
	if err != nil {
		return nil, fmt.Errorf("new launcher: %w", err)
	}
	cfg.Self = self
	if cfg.Init == "" {
		cfg.Init = filepath.Join(filepath.Dir(cfg.Self), helperpath.RunInit)
	}
	if cfg.Hostname == "" {
		cfg.Hostname = launch.RunHostname
	}
	if cfg.Filters == nil {
		cfg.Filters = defaultFilters
	}
	cfg.Log = launch.LogOrDiscard(cfg.Log)
	l := &Backend{cfg: cfg, unsafe: testWeakening()}
	if cfg.Limits != nil {
		l.mech = *cfg.Limits
	} else {
		l.mech = SetUpLimits() // once per backend, that is per helper start: never per launch
	}
	return l, nil
}

// Mechanism returns the limits mechanism in use.
func (l *Backend) Mechanism() Mechanism { return l.mech }

// Limits implements launch.Limited: a run gets the cgroup limits whenever there is a
// mechanism; a run whose limits cannot then be set or read back does not start (S6).
func (l *Backend) Limits() sandbox.CgroupLimits {
	if l.mech.Mode == LimitsNone {
		return sandbox.CgroupNone
	}
	return sandbox.CgroupFull
}

// bwrapPath resolves bubblewrap or returns no_bwrap.
func (l *Backend) bwrapPath() (string, error) {
	name := l.cfg.Bwrap
	if name == "" {
		name = "bwrap"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", reasons.New(reasons.NoBwrap, err.Error())
	}
	return p, nil
}

// initPath resolves the run's init, or returns no_run_init: without it no run can start.
func (l *Backend) initPath() (string, error) {
	p, err := filepath.EvalSymlinks(l.cfg.Init)
	if err == nil {
		p, err = filepath.Abs(p) // bound into the run by its absolute path
	}
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(p); err == nil && (!fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0) {
			err = fmt.Errorf("not an executable file")
		}
	}
	if err != nil {
		return "", reasons.New(reasons.NoRunInit, fmt.Sprintf("%s: %v", l.cfg.Init, err))
	}
	return p, nil
}

// classifyStart maps bwrap's own error message to a reason code (F2). restricted is whether
// AppArmor restricts unprivileged user namespaces (usernsRestricted).
func classifyStart(msg string, restricted bool) reasons.Code {
	m := strings.ToLower(msg)
	denied := strings.Contains(m, "permission denied") || strings.Contains(m, "operation not permitted")
	switch {
	// Under Ubuntu's restriction an unconfined bwrap still gets its user namespace, but
	// AppArmor's unprivileged_userns profile takes every capability in it, so whichever setup
	// step comes first fails with EPERM or EACCES: on Ubuntu 24.04 it is the loopback address
	// ("loopback: Failed RTM_NEWADDR: Operation not permitted"), elsewhere the uid map. The
	// anet-bwrap profile is the fix (L2).
	case restricted && denied:
		return reasons.UsernsBlocked
	case strings.Contains(m, "setting up uid map") && strings.Contains(m, "permission denied"):
		return reasons.UsernsUnavailable
	case strings.Contains(m, "no permissions to creat"), // bwrap 0.8: "No permissions to creating new namespace"
		strings.Contains(m, "creating new namespace failed"),
		strings.Contains(m, "max_user_namespaces"):
		return reasons.UsernsUnavailable
	case strings.Contains(m, "loopback"), strings.Contains(m, "rtm_newaddr"):
		return reasons.NetnsFailed
	case strings.Contains(m, "seccomp"):
		return reasons.SeccompFailed
	}
	return reasons.SandboxStartFailed
}

// startReason is the reason code of a start that bwrap ended with msg on its stderr: every
// path of a failed start (probed, unprobed, a set-up step bwrap died under) names it so.
func startReason(msg string) reasons.Code { return classifyStart(msg, usernsRestricted()) }

// usernsRestricted reports whether AppArmor restricts unprivileged user namespaces on this
// host (kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 23.10 and later).
func usernsRestricted() bool {
	b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// Binaries names the programs a probe result depends on besides the launcher's own binary:
// the probe cache on disk is not reused once bwrap or the run's init is replaced
// (sandbox.FileStamp).
func (l *Backend) Binaries() []string {
	var out []string
	if p, err := l.bwrapPath(); err == nil {
		out = append(out, p)
	}
	if p, err := l.initPath(); err == nil {
		out = append(out, p)
	}
	return out
}
