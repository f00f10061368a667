package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// systemdReadBack reads the limits from the scope's own cgroup (v2, which user systemd uses)
// and returns that cgroup's directory, where the run's limit events are read.
func systemdReadBack(pid int, lim sandbox.Limits) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", fmt.Errorf("systemd read back: %w", err)
	}
	var path string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "0::") {
			path = strings.TrimPrefix(line, "0::")
		}
	}
	if path == "" {
		return "", fmt.Errorf("systemd read back: pid %d has no cgroup v2 path", pid)
	}
	for _, base := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		dir := filepath.Join(base, path)
		mem, err1 := launch.ReadNumber(filepath.Join(dir, "memory.max"))
		tasks, err2 := launch.ReadNumber(filepath.Join(dir, "pids.max"))
		if err1 != nil || err2 != nil {
			continue
		}
		if mem != (lim.Memory+4095)&^4095 && mem != lim.Memory || tasks != lim.Tasks {
			return "", fmt.Errorf("systemd read back %s: memory.max=%d pids.max=%d, want %d and %d", dir, mem, tasks, lim.Memory, lim.Tasks)
		}
		return dir, nil
	}
	return "", fmt.Errorf("systemd read back: no memory.max/pids.max for %s", path)
}

// scopeHit says which limit a run in the systemd scope dir ran into, if any. The scope is
// systemd's and goes (with its event counters) once its last process has exited, so it is
// read while bwrap, which holds it open, still runs: when bwrap reports init's exit.
func scopeHit(dir string) reasons.Code {
	if dir == "" {
		return ""
	}
	return launch.LimitHit(filepath.Join(dir, "memory.events"), filepath.Join(dir, "pids.events"))
}
