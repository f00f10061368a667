// Package bwrap is the Linux isolation backend of pkg/sandbox/launch (registered as "bwrap"):
// it renders a sandbox.Spec into bubblewrap arguments (Args, a pure function), applies the
// spec (link-safe dirs, seccomp memfds, cgroup limits, exec) and probes (S7). The run's pid 1
// and loopback bridge are pkg/sandbox/runinit; the in-sandbox checks are pkg/sandbox/attack's.
package bwrap

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// Layout is what the bwrap backend adds to a run's plan: the dirs it made, the child's
// descriptors, the run's hostname and init. The plan's host paths (the agent's and the
// interpreter's trees, the endpoint) are the plan's. Args only reads both.
type Layout struct {
	// SystemDirs are bound read-only, or made the same symlinks (launch.HostSystemDirs).
	SystemDirs []launch.SystemDir
	// Home, Tmp and Work are host dirs created for the run (resolved, link-free).
	Home, Tmp, Work string
	// Init is the resolved host path of the run's pid 1 (anet-runinit), bound at
	// sandbox.SandboxInit.
	Init string
	// Self is the resolved host path of anet-sandboxd, bound at sandbox.SandboxSelf only when
	// the run's program is sandbox.SandboxSelf (self-test's attack battery).
	Self string
	// SeccompFDs are the child's fd numbers of the sealed seccomp programs.
	SeccompFDs []int
	// EnvFD is the child's fd number of the handed-in environment (NUL-separated), or -1.
	EnvFD int
	// StatusFD is the child's fd for bwrap's --json-status-fd, or -1.
	StatusFD int
	// HoldFD is the child's fd init waits on (its --hold) before it starts the agent, until
	// the launcher has moved it into the run's cgroups from outside (cgroup v2, systemd), or
	// -1 when the run is born in them (cgroup v1) or has none.
	HoldFD int
	// FileSize is the run's RLIMIT_FSIZE, which init sets (with RLIMIT_CORE 0) before the
	// agent starts (its --fsize); 0 for none.
	FileSize int64
	// Hostname is the run's own hostname.
	Hostname string
	// Gate are init's flags that fold the probe into the run (pkg/sandbox/gate), or none.
	Gate []string
	// Unsafe drops protections; only test builds (-tags anettest) ever set it.
	Unsafe Weakening
	// Wall is what a backend built on this one adds (StartWall); empty for an agent's run.
	Wall Wall
}

// Wall lists the named differences between an agent's wall and the wall of a program that a
// backend built on this one runs in its place (the vm backend's QEMU, V1). Everything else (the
// namespaces, the seccomp programs, capabilities, limits) stays the same.
type Wall struct {
	// Devices are host device nodes bound into the run, each one of WallDevices.
	Devices []string
	// Binds are host paths bound read-only at fixed paths under sandbox.SandboxRunDir
	// (the guest kernel and initramfs, the VM link's socket).
	Binds []Bind
}

// Bind is one read-only bind of a Wall.
type Bind struct {
	Src, Dst string
}

// WallDevices are the only devices a Wall may bind: KVM for an accelerated guest and the
// vhost-vsock device for its link. An agent's wall has neither: both reach the hypervisor.
var WallDevices = []string{"/dev/kvm", "/dev/vhost-vsock"}

// Weakening names protections a test build can drop to prove self-test notices (C4).
type Weakening struct {
	KeepNet     bool // no --unshare-net
	NoSeccomp   bool // no seccomp programs
	AllowUserns bool // no --disable-userns
}

// Args renders a run's plan and layout into bwrap's argument list (without "bwrap" itself).
// It is pure: the same input gives the same output, tested against a golden file. The plan
// was checked when it was made (launch.Prepare); Args checks the layout, which is its own.
func Args(p *launch.Plan, l Layout) ([]string, error) {
	spec, h := p.Spec(), p.Host()
	if err := l.validate(spec, h); err != nil {
		return nil, fmt.Errorf("bwrap args: %w", err)
	}
	a := []string{
		// Namespaces (S1). --unshare-user is explicit: bwrap only implies it when not root,
		// and as root without it the sandbox would keep capabilities.
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
	}
	if !l.Unsafe.KeepNet {
		a = append(a, "--unshare-net")
	}
	if !l.Unsafe.AllowUserns {
		a = append(a, "--disable-userns")
	}
	a = append(a,
		"--new-session",     // TIOCSTI defence: no controlling terminal shared with the host
		"--die-with-parent", // runs end when the launcher ends (S4)
		"--as-pid-1",        // our init is pid 1: it reaps and forwards signals itself
		"--cap-drop", "ALL",
		"--clearenv",
		"--hostname", l.Hostname,
		"--proc", "/proc",
		"--dev", "/dev",
	)
	for _, d := range l.SystemDirs {
		if d.Link != "" {
			a = append(a, "--symlink", d.Link, d.Path)
		} else {
			a = append(a, "--ro-bind", d.Path, d.Path)
		}
	}
	a = append(a,
		"--bind", l.Home, sandbox.SandboxHome,
		"--bind", l.Tmp, sandbox.SandboxTmp,
		"--bind", l.Work, sandbox.SandboxWork,
		"--perms", "0755", "--dir", sandbox.SandboxRunDir,
		"--ro-bind", l.Init, sandbox.SandboxInit,
	)
	if h.Prog == sandbox.SandboxSelf {
		a = append(a, "--ro-bind", l.Self, sandbox.SandboxSelf)
	}
	if h.AgentTree != "" {
		a = append(a, "--ro-bind", h.AgentTree, h.AgentTree)
	}
	if h.RuntimeTree != "" && !sandbox.Within(h.RuntimeTree, h.AgentTree) {
		a = append(a, "--ro-bind", h.RuntimeTree, h.RuntimeTree)
	}
	if h.Endpoint != "" {
		// Read-only still lets init connect(); the run cannot replace or chmod the socket.
		a = append(a, "--ro-bind", h.Endpoint, sandbox.SandboxEndpoint)
	}
	for _, b := range l.Wall.Binds {
		a = append(a, "--ro-bind", b.Src, b.Dst)
	}
	for _, d := range l.Wall.Devices {
		a = append(a, "--dev-bind", d, d)
	}
	if l.EnvFD >= 0 {
		a = append(a, "--perms", "0400", "--ro-bind-data", strconv.Itoa(l.EnvFD), sandbox.SandboxEnvFile)
	}
	if !l.Unsafe.NoSeccomp {
		for _, fd := range l.SeccompFDs {
			a = append(a, "--add-seccomp-fd", strconv.Itoa(fd))
		}
	}
	if l.StatusFD >= 0 {
		a = append(a, "--json-status-fd", strconv.Itoa(l.StatusFD))
	}
	// The root and /dev are bwrap's tmpfs; once everything is mounted they go read-only too,
	// so a run writes only its home, tmp and work dir (measured) and /dev/shm (its own tmpfs,
	// charged to the run's memory limit).
	a = append(a, "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--remount-ro", "/")
	for _, kv := range sandbox.RunEnv(h.RuntimeBin) {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	a = append(a, "--chdir", sandbox.SandboxWork, "--", sandbox.SandboxInit)
	if h.Endpoint != "" {
		a = append(a, "--endpoint", sandbox.SandboxEndpoint, "--port", strconv.Itoa(spec.Port))
	}
	if l.EnvFD >= 0 {
		a = append(a, "--env-file", sandbox.SandboxEnvFile)
	}
	if l.HoldFD >= 0 {
		a = append(a, "--hold", strconv.Itoa(l.HoldFD))
	}
	if l.FileSize > 0 {
		a = append(a, "--fsize", strconv.FormatInt(l.FileSize, 10))
	}
	a = append(a, l.Gate...)
	a = append(a, "--")
	return append(a, p.Argv()...), nil
}

func (l Layout) validate(spec sandbox.Spec, h launch.HostPaths) error {
	var errs []error
	for _, p := range []struct{ name, v string }{
		{"home", l.Home}, {"tmp", l.Tmp}, {"work", l.Work}, {"init", l.Init},
	} {
		if !filepath.IsAbs(p.v) || filepath.Clean(p.v) != p.v {
			errs = append(errs, fmt.Errorf("layout %s %q: want a clean absolute path", p.name, p.v))
		}
	}
	if h.Prog == sandbox.SandboxSelf && (!filepath.IsAbs(l.Self) || filepath.Clean(l.Self) != l.Self) {
		errs = append(errs, fmt.Errorf("layout self %q: want a clean absolute path (the run's program is anet-sandboxd)", l.Self))
	}
	if spec.EndpointAddr != "" {
		// The run's own network namespace cannot reach the host's loopback.
		errs = append(errs, errors.New("endpoint_addr: bwrap runs reach their endpoint through its socket (endpoint), not the host loopback"))
	}
	if l.Hostname == "" || strings.ContainsAny(l.Hostname, "/ \x00") || len(l.Hostname) > 64 {
		errs = append(errs, fmt.Errorf("layout hostname %q: want 1-64 characters, no / or space", l.Hostname))
	}
	if len(l.SeccompFDs) == 0 && !l.Unsafe.NoSeccomp {
		errs = append(errs, errors.New("layout seccomp: no programs (refusing to run without a filter)"))
	}
	for _, d := range l.SystemDirs {
		if !launch.IsSystemDir(d.Path) {
			errs = append(errs, fmt.Errorf("layout system dir %q: not one of %v", d.Path, launch.DefaultSystemDirs))
		}
	}
	return errors.Join(append(errs, l.Wall.validate(spec.Hidden))...)
}

func (w Wall) validate(hidden []string) error {
	var errs []error
	for _, d := range w.Devices {
		if !slices.Contains(WallDevices, d) {
			errs = append(errs, fmt.Errorf("layout wall device %q: not one of %v", d, WallDevices))
		}
	}
	reserved := []string{sandbox.SandboxEndpoint, sandbox.SandboxSelf, sandbox.SandboxInit, sandbox.SandboxEnvFile}
	seen := map[string]bool{}
	for _, b := range w.Binds {
		switch {
		case !cleanAbs(b.Src) || !cleanAbs(b.Dst):
			errs = append(errs, fmt.Errorf("layout wall bind %q -> %q: want clean absolute paths", b.Src, b.Dst))
		case !strings.HasPrefix(b.Dst, sandbox.SandboxRunDir+"/") || slices.Contains(reserved, b.Dst) || seen[b.Dst]:
			errs = append(errs, fmt.Errorf("layout wall bind %q: want a free path under %s", b.Dst, sandbox.SandboxRunDir))
		}
		seen[b.Dst] = true
		for _, h := range hidden {
			if launch.Overlaps(b.Src, h) {
				errs = append(errs, fmt.Errorf("layout wall bind %q: overlaps %q, which must never be visible in a run", b.Src, h))
			}
		}
	}
	return errors.Join(errs...)
}

func cleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}
