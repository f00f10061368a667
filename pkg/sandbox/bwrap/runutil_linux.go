package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

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

// scopeWatch follows a systemd scope's event counters from the read-back on. The scope, and
// its counters with it, goes once its last process has exited: bwrap writes init's exit code
// and exits at once, so under load systemd may remove the scope before that report is read,
// and a run the OOM killer stopped would end with no memory_limit. memory.events and
// pids.events raise a modify event on every change of a counter (cgroup v2), at the moment of
// the kill, while the scope still holds the run: each event is read at once, and a hit
// stays.
type scopeWatch struct {
	dir  string
	f    *os.File // the inotify instance, non-blocking, so Close ends the reader's Read
	done chan struct{}

	mu  sync.Mutex
	hit reasons.Code
}

// watchScope starts following dir's counters; nil when inotify cannot watch them (the run
// is then judged by the reads at its end alone).
func watchScope(dir string) *scopeWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	w := &scopeWatch{dir: dir, f: os.NewFile(uintptr(fd), "inotify "+dir), done: make(chan struct{})}
	watched := 0
	for _, name := range []string{"memory.events", "pids.events"} {
		if _, err := unix.InotifyAddWatch(fd, filepath.Join(dir, name), unix.IN_MODIFY); err == nil {
			watched++
		}
	}
	if watched == 0 {
		w.f.Close()
		return nil
	}
	w.note() // a hit before the watch began
	go w.follow()
	return w
}

func (w *scopeWatch) follow() {
	defer close(w.done)
	buf := make([]byte, 4096)
	for {
		if _, err := w.f.Read(buf); err != nil {
			return // closed, or the watched files went with the scope
		}
		w.note()
	}
}

func (w *scopeWatch) note() {
	if hit := scopeHit(w.dir); hit != "" {
		w.mu.Lock()
		if w.hit == "" {
			w.hit = hit
		}
		w.mu.Unlock()
	}
}

// Hit is the first limit seen hit, or "".
func (w *scopeWatch) Hit() reasons.Code {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hit
}

// Close stops following; Hit keeps its answer.
func (w *scopeWatch) Close() {
	if w == nil {
		return
	}
	w.f.Close()
	<-w.done
}
