package bwrap

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"anet.dev/anet/pkg/sandbox"
)

// LastLine is the last non-empty line of s (a program's last word on stderr); carriage
// returns (a serial console's) are dropped.
func LastLine(s string) string { return lastLine(s) }

func lastLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r", ""))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// NewTail returns a writer that passes writes through to w (nil: none) and keeps the last max
// bytes, for a program's error message (bwrap's, QEMU's, a guest console's).
func NewTail(w io.Writer, max int) *Tail { return &tailWriter{w: w, max: max} }

// Tail is what NewTail returns; String is the kept tail.
type Tail = tailWriter

func (t *tailWriter) String() string { return t.tail() }

// tailWriter passes writes through and keeps the last max bytes (bwrap's error message).
type tailWriter struct {
	w   io.Writer
	max int

	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	t.mu.Unlock()
	if t.w == nil {
		return len(p), nil
	}
	return t.w.Write(p)
}

func (t *tailWriter) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.Clone(t.buf))
}

// systemdReadBack reads the limits from the scope's own cgroup (v2, which user systemd uses).
func systemdReadBack(pid int, lim sandbox.Limits) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return fmt.Errorf("systemd read back: %w", err)
	}
	var path string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "0::") {
			path = strings.TrimPrefix(line, "0::")
		}
	}
	if path == "" {
		return fmt.Errorf("systemd read back: pid %d has no cgroup v2 path", pid)
	}
	for _, base := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		dir := filepath.Join(base, path)
		mem, err1 := readInt(filepath.Join(dir, "memory.max"))
		tasks, err2 := readInt(filepath.Join(dir, "pids.max"))
		if err1 != nil || err2 != nil {
			continue
		}
		if mem != (lim.Memory+4095)&^4095 && mem != lim.Memory || tasks != lim.Tasks {
			return fmt.Errorf("systemd read back %s: memory.max=%d pids.max=%d, want %d and %d", dir, mem, tasks, lim.Memory, lim.Tasks)
		}
		return nil
	}
	return fmt.Errorf("systemd read back: no memory.max/pids.max for %s", path)
}
