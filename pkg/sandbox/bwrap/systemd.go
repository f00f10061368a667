package bwrap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/sandbox"
)

// User systemd is the preferred limits mechanism (S6): a transient scope around the launch.
// A scope adopts only the pid systemd-run execs, so systemd-run must wrap the launch itself
// (it creates the scope, moves itself in, then execs the rest of the command line).

// systemdUserAvailable detects a reachable user manager without starting anything.
func systemdUserAvailable() (bool, string) {
	rt := os.Getenv("XDG_RUNTIME_DIR")
	if rt == "" {
		return false, "XDG_RUNTIME_DIR is not set"
	}
	if _, err := os.Stat(filepath.Join(rt, "systemd", "private")); err != nil {
		if _, err2 := os.Stat(filepath.Join(rt, "bus")); err2 != nil {
			return false, "no user manager socket in " + rt
		}
	}
	p, err := exec.LookPath("systemd-run")
	if err != nil {
		return false, "systemd-run not found"
	}
	// is-system-running exits non-zero for "degraded" too, so judge by the state it prints;
	// "offline" means no manager answered (a stray socket file is not a manager).
	out, _ := exec.Command("systemctl", "--user", "is-system-running").Output()
	state := strings.TrimSpace(string(out))
	if !userManagerUp(state) {
		return false, fmt.Sprintf("user manager state %q", state)
	}
	return true, "user systemd (" + p + ", " + state + ")"
}

// userBusEnv is the environment that points systemd-run at the user manager this process
// would reach: the variables that are set, of XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS.
func userBusEnv(getenv func(string) string) []string {
	var env []string
	for _, k := range []string{"XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"} {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// userManagerUp reports whether an is-system-running state means the manager can start units.
func userManagerUp(state string) bool {
	switch state {
	case "running", "degraded", "starting", "initializing":
		return true
	}
	return false
}

// SystemdScopeArgs is the systemd-run command line that wraps a launch in a transient scope
// with the run's limits. rest is the command to run inside (bwrap and its arguments).
func SystemdScopeArgs(systemdRun, id string, lim sandbox.Limits, rest []string) []string {
	lim = lim.WithDefaults()
	a := []string{
		systemdRun, "--user", "--scope", "--quiet", "--collect",
		"--unit=" + ScopeUnit(id),
		"--description=anet sandboxed run " + id,
		"-p", "MemoryMax=" + strconv.FormatInt(lim.Memory, 10),
		"-p", "MemorySwapMax=0",
		"-p", "TasksMax=" + strconv.FormatInt(lim.Tasks, 10),
		// The kernel's OOM kill of one process is the memory limit's whole effect, as in a
		// cgroup of ours: the default policy (stop) would also TERM bwrap and init, so the
		// run would end with no exit status and no memory_limit to report.
		"-p", "OOMPolicy=continue",
		"--",
	}
	return append(a, rest...)
}

// ScopeUnit is the transient unit name of run id.
func ScopeUnit(id string) string { return fmt.Sprintf("anet-run-%s.scope", id) }
