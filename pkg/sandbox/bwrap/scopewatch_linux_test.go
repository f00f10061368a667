package bwrap

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/pkg/sandbox"
)

// S6: a run in a systemd scope that the OOM killer stopped reports memory_limit even when
// systemd removed the scope, and its counters, before init's exit was read. The watch is
// given a directory shaped like a scope's (the cgroup v2 files are plain files here: what is
// tested is that a change is read when the kernel says so, and that a hit outlives the
// directory); the hosts rig's c-boundaries proves it under a real user manager.
func TestScopeWatchKeepsAHitAfterTheScopeGoesS6(t *testing.T) {
	for _, tc := range []struct {
		file, line string
		want       string
	}{
		{"memory.events", "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n", string(sandbox.LimitMemory)},
		{"pids.events", "max 3\n", string(sandbox.LimitTasks)},
	} {
		dir := filepath.Join(t.TempDir(), "anet-run-x.scope")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write := func(name, s string) {
			t.Helper()
			// In place, as the kernel changes a counter file: a modify event, not a new file.
			f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(s); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		write("memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
		write("pids.events", "max 0\n")
		w := watchScope(dir)
		if w == nil {
			t.Fatal("watchScope gave no watch for a dir with both counter files")
		}
		if got := w.Hit(); got != "" {
			t.Fatalf("%s: hit %q before any counter moved", tc.file, got)
		}
		write(tc.file, tc.line)
		deadline := time.Now().Add(10 * time.Second)
		for w.Hit() == "" && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if err := os.RemoveAll(dir); err != nil { // systemd removes the empty scope
			t.Fatal(err)
		}
		w.Close()
		if got := string(w.Hit()); got != tc.want {
			t.Errorf("%s changed, then the scope went: Hit() = %q, want %q", tc.file, got, tc.want)
		}
		if got := scopeHit(dir); got != "" {
			t.Fatalf("scopeHit of a removed scope = %q: the read at the end would have seen it, and this test proves nothing", got)
		}
	}
	// Without counter files there is nothing to follow.
	if w := watchScope(t.TempDir()); w != nil {
		w.Close()
		t.Error("watchScope followed a dir with no counter files")
	}
	var none *scopeWatch
	if none.Hit() != "" {
		t.Error("a nil watch reports a hit")
	}
	none.Close()
}
