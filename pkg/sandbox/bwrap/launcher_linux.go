package bwrap

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

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
	// Self is the anet-sandboxd binary (bound into every run and started there as pid 1);
	// "" uses os.Executable().
	Self string
	// Hostname is the runs' hostname; "" is "anet-run".
	Hostname string
	// Filters returns the seccomp programs; nil uses pkg/sandbox/seccomp.
	Filters func() ([][]byte, error)
	// Limits overrides the detected mechanism (tests); nil detects.
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
	if cfg.Self == "" {
		p, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("new launcher: find own binary: %w", err)
		}
		cfg.Self = p
	}
	real, err := filepath.EvalSymlinks(cfg.Self)
	if err != nil {
		return nil, fmt.Errorf("new launcher: resolve %s: %w", cfg.Self, err)
	}
	cfg.Self = real
	if cfg.Hostname == "" {
		cfg.Hostname = "anet-run"
	}
	if cfg.Filters == nil {
		cfg.Filters = defaultFilters
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	l := &Backend{cfg: cfg, unsafe: testWeakening()}
	if cfg.Limits != nil {
		l.mech = *cfg.Limits
	} else {
		l.mech = DetectLimits()
	}
	return l, nil
}

// Mechanism returns the limits mechanism in use.
func (l *Backend) Mechanism() Mechanism { return l.mech }

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

// systemDirs lists the DefaultSystemDirs present on the host, as dirs or as their symlinks.
func systemDirs() []SystemDir {
	var out []SystemDir
	for _, d := range DefaultSystemDirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t, err := os.Readlink(d)
			if err != nil {
				continue
			}
			out = append(out, SystemDir{Path: d, Link: t})
			continue
		}
		if fi.IsDir() {
			out = append(out, SystemDir{Path: d})
		}
	}
	return out
}

// agentTree decides which dir to bind for the agent, and the argv[0] to use inside: the
// realpath of the program, which must then lie in a system dir or in the bound tree.
func agentTree(spec sandbox.Spec) (tree, prog string, err error) {
	if spec.Argv[0] == sandbox.SandboxSelf {
		return "", sandbox.SandboxSelf, nil // the launcher's own binary, always bound there
	}
	prog, err = filepath.EvalSymlinks(spec.Argv[0])
	if err != nil {
		return "", "", fmt.Errorf("agent %s: %w", spec.Argv[0], err)
	}
	tree = spec.AgentTree
	if tree != "" {
		if tree, err = filepath.EvalSymlinks(tree); err != nil {
			return "", "", fmt.Errorf("agent tree %s: %w", spec.AgentTree, err)
		}
	} else {
		for _, d := range DefaultSystemDirs {
			if within(prog, d) {
				return "", prog, nil
			}
		}
		tree = filepath.Dir(prog)
	}
	if !within(prog, tree) {
		return "", "", fmt.Errorf("agent %s: not inside its tree %s", prog, tree)
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
	}
	hidden := make([]string, 0, len(spec.Hidden))
	for _, h := range spec.Hidden {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			h = r
		}
		hidden = append(hidden, h)
	}
	if err := CheckAgentTree(tree, hidden, home); err != nil {
		return "", "", err
	}
	return tree, prog, nil
}

// classifyStart maps bwrap's own error message to a reason code (F2).
func classifyStart(msg string) reasons.Code {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "setting up uid map") && strings.Contains(m, "permission denied"):
		if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" {
			return reasons.UsernsBlocked
		}
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

// Binaries names the programs a probe result depends on besides the launcher's own binary:
// the probe cache on disk is not reused once bwrap is replaced (sandbox.FileStamp).
func (l *Backend) Binaries() []string {
	p, err := l.bwrapPath()
	if err != nil {
		return nil
	}
	return []string{p}
}
// HostSystemDirs lists the DefaultSystemDirs present on this host as a run sees them (the VM
// tier shares the same ones into its guest).
func HostSystemDirs() []SystemDir { return systemDirs() }

// ResolveAgent returns the agent tree to expose and the program path to run, by the rules
// of a bwrap run (the VM tier applies the same ones).
func ResolveAgent(spec sandbox.Spec) (tree, prog string, err error) { return agentTree(spec) }
