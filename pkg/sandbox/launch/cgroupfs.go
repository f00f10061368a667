package launch

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// The cgroup files a run's limits are written to and read from, in one format for the bwrap
// backend's leaves on the host and the vm guest's agent cgroup.

// ReadNumber reads a file holding one number (a cgroup limit, a sysctl); "max" reads as -1.
func ReadNumber(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %q: %w", p, s, err)
	}
	return n, nil
}

// WriteNumber writes v to dir/file and reads it back: a limit the kernel did not take as
// written is not in force (S6, fail closed).
func WriteNumber(dir, file string, v int64) error {
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, []byte(strconv.FormatInt(v, 10)), 0); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	got, err := ReadNumber(p)
	if err != nil {
		return err
	}
	if got != v {
		return fmt.Errorf("read back %s = %d, want %d", p, got, v)
	}
	return nil
}

// EventCount reads the value of key from a file of "key value" lines (memory.events,
// pids.events, memory.oom_control); 0 when the file or the key is missing.
func EventCount(p, key string) int64 {
	f, err := os.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// LimitHit says which cgroup limit a run ran into, if any, from its memory events (the v2
// memory.events or v1 memory.oom_control) and its pids.events.
func LimitHit(memoryEvents, pidsEvents string) reasons.Code {
	if EventCount(memoryEvents, "oom_kill") > 0 {
		return sandbox.LimitMemory
	}
	if EventCount(pidsEvents, "max") > 0 {
		return sandbox.LimitTasks
	}
	return ""
}
