package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"anet.dev/anet/pkg/sandbox"
)

// A user-systemd transient scope per run is the limits mechanism of a node started by hand
// under a user manager (S6), where no cgroup is delegated to it. A scope adopts only the pid
// systemd-run execs, so systemd-run must wrap the launch itself (it creates the scope, moves
// itself in, then execs the rest of the command line): a fork, an exec and D-Bus round trips
// per launch, which the delegated subtree of the packaged units does without.

// managerTimeout bounds each question to a manager: a helper must start even when one hangs.
const managerTimeout = 5 * time.Second

// busVars are the variables systemctl and systemd-run find the user manager by.
var busVars = []string{"XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"}

// systemdUserAvailable detects a reachable user manager without starting anything, and
// returns the variables systemd-run needs to reach it. Asked once per helper start.
func systemdUserAvailable() (ok bool, why string, env []string) {
	rt := os.Getenv("XDG_RUNTIME_DIR")
	if rt == "" {
		return false, "XDG_RUNTIME_DIR is not set", nil
	}
	if _, err := os.Stat(filepath.Join(rt, "systemd", "private")); err != nil {
		if _, err2 := os.Stat(filepath.Join(rt, "bus")); err2 != nil {
			return false, "no user manager socket in " + rt, nil
		}
	}
	p, err := exec.LookPath("systemd-run")
	if err != nil {
		return false, "systemd-run not found", nil
	}
	// is-system-running exits non-zero for "degraded" too, so judge by the state it prints;
	// "offline" means no manager answered (a stray socket file is not a manager).
	ctx, cancel := context.WithTimeout(context.Background(), managerTimeout)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "systemctl", "--user", "is-system-running").Output()
	state := strings.TrimSpace(string(out))
	if !userManagerUp(state) {
		return false, fmt.Sprintf("user manager state %q", state), nil
	}
	for _, k := range busVars {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return true, "user systemd (" + p + ", " + state + ")", env
}

// userUnitDelegates asks the user manager whether unit has Delegate= (judgeV2: below a user
// manager, ownership of a cgroup proves nothing).
func userUnitDelegates(unit string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), managerTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", "--user", "show", "--property=Delegate", "--value", "--", unit).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return false, fmt.Errorf("systemctl --user show %s: %v: %s", unit, err, strings.TrimSpace(string(ee.Stderr)))
		}
		return false, fmt.Errorf("systemctl --user show %s: %w", unit, err)
	}
	return delegateValue(string(out))
}

// delegateValue reads systemctl's answer for the Delegate property.
func delegateValue(out string) (bool, error) {
	switch v := strings.TrimSpace(out); v {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	default:
		return false, fmt.Errorf("unexpected Delegate value %q", v)
	}
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
