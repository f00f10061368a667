package bwrap

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
)

// These run on a real cgroup v2 hierarchy, in a dir the harness delegated to the test user
// by ownership. On this project's CI host (hybrid: memory and pids are cgroup v1's) that dir
// has no memory or pids controller, so what is proved here is the plumbing of the delegated
// path, not its limits: moving a unit's processes into ServiceLeaf while one keeps forking,
// cloning a process straight into a cgroup, cgroup.kill, the leaves' locks and the sweep of a
// killed launcher's leaves. The limits themselves (memory.max, pids.max read back, the
// controllers enabled under the no-internal-processes rule) run in the hosts rig
// (integration/hosts/scenarios/h-delegated.sh), on stock Debian 12 with systemd.

// TestDelegatedSubtreePlumbing (S6, S1): the set-up empties the subtree into ServiceLeaf
// and keeps it empty while the unit forks; a process cloned into a run's leaf reads that leaf
// as its cgroup with its first instruction, and bwrap started there makes it the root of the
// run's cgroup namespace; cgroup.kill ends what runs in a leaf and remove takes the leaf; at
// the next set-up the sweep removes a leaf whose launcher died (killing what survived in it)
// and leaves a live launcher's alone.
func TestDelegatedSubtreePlumbing(t *testing.T) {
	base := testharness.CgroupV2Dir(t)
	root := filepath.Join(base, "subtree-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(t, root) })
	rootF, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rootF.Close()
	controllers := strings.Fields(readFile(t, filepath.Join(root, "cgroup.controllers")))

	// The unit's processes, as systemd starts them in the unit's cgroup: one keeps forking.
	unit := exec.Command("/bin/sh", "-c", "while :; do sleep 0.5 & sleep 0.01; done")
	if err := bornIn(unit, rootF); err != nil {
		t.Fatalf("start in %s: %v", root, err)
	}
	defer func() { _ = unit.Process.Kill(); _ = unit.Wait() }()
	testkit.WaitWithin(t, "the unit and a child of it in "+root, 10*time.Second, func() bool { return len(procsOf(t, root)) >= 2 })

	if err := setUpSubtree(root, controllers, 5*time.Second); err != nil {
		t.Fatalf("setUpSubtree(%s, %q) = %v", root, controllers, err)
	}
	svc := filepath.Join(root, ServiceLeaf)
	for _, after := range []time.Duration{0, 100 * time.Millisecond} { // at once, and several forks later
		time.Sleep(after)
		if p := procsOf(t, root); len(p) != 0 {
			t.Errorf("%s holds processes of its own %s after the set-up: %v", root, after, p)
		}
	}
	if p := procsOf(t, svc); !contains(p, unit.Process.Pid) {
		t.Errorf("the unit's process %d is not in %s: %v", unit.Process.Pid, svc, p)
	}

	// A run's leaf: the first instruction of a process cloned into it reads it.
	dir, f, err := makeV2Leaf(root, leafPrefix+"first")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	first := exec.Command("/bin/cat", "/proc/self/cgroup")
	first.Stdout = &out
	if err := bornIn(first, f); err != nil {
		t.Fatalf("start in %s: %v", dir, err)
	}
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	if want := "0::" + ownV2Path(t) + "/" + filepath.Base(root) + "/" + leafPrefix + "first"; v2Line(out.String()) != want {
		t.Errorf("a process cloned into %s reads %q, want %q", dir, out.String(), want)
	}
	// bwrap started there unshares the cgroup namespace in the leaf (S1): the run's root.
	out.Reset()
	bw := exec.Command("bwrap", "--unshare-user", "--unshare-cgroup", "--ro-bind", "/", "/", "--proc", "/proc", "cat", "/proc/self/cgroup")
	bw.Stdout, bw.Stderr = &out, &out
	if err := bornIn(bw, f); err != nil {
		t.Fatalf("start bwrap in %s: %v", dir, err)
	}
	if err := bw.Wait(); err != nil || v2Line(out.String()) != "0::/" {
		t.Errorf("bwrap born in %s: %v, the run reads %q; want 0::/ (its namespace rooted at the leaf)", dir, err, out.String())
	}

	// kill and remove: cgroup.kill ends the run, rmdir takes the leaf, the lock goes with it.
	sleeper := startIn(t, f)
	l := &leaf{mode: LimitsV2, dirs: []string{dir}, procs: []string{filepath.Join(dir, "cgroup.procs")}, fd: f, mem: dir, pids: dir}
	l.kill()
	wantKilled(t, sleeper)
	l.remove()
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is left after remove: %v", dir, err)
	}

	// A launcher killed mid-run: its lock died with it, and a process survived in its leaf.
	staleDir, staleF, err := makeV2Leaf(root, leafPrefix+"stale")
	if err != nil {
		t.Fatal(err)
	}
	survivor := startIn(t, staleF)
	staleF.Close()
	// A live launcher's run beside it.
	liveDir, liveF, err := makeV2Leaf(root, leafPrefix+"live")
	if err != nil {
		t.Fatal(err)
	}
	live := startIn(t, liveF)
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	// The helper's next start: the set-up again (idempotent) and its sweep.
	if err := setUpSubtree(root, controllers, 5*time.Second); err != nil {
		t.Fatalf("setUpSubtree again = %v", err)
	}
	wantKilled(t, survivor)
	if _, err := os.Lstat(staleDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead launcher's leaf %s is left after the sweep: %v", staleDir, err)
	}
	if _, err := os.Lstat(liveDir); err != nil {
		t.Errorf("the live launcher's leaf was swept: %v", err)
	}
	if err := live.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the live launcher's run was killed by the sweep: %v", err)
	}
	if n := sweepV2(root); n != 0 {
		t.Errorf("sweepV2 removed %d leaves, want 0 (only a live one is left)", n)
	}
	ll := &leaf{mode: LimitsV2, dirs: []string{liveDir}, procs: []string{filepath.Join(liveDir, "cgroup.procs")}, fd: liveF, mem: liveDir, pids: liveDir}
	ll.kill()
	wantKilled(t, live)
	ll.remove()
}

// startIn starts a long sleep cloned into the cgroup f.
func startIn(t *testing.T, f *os.File) *exec.Cmd {
	t.Helper()
	c := exec.Command("/bin/sleep", "60")
	if err := bornIn(c, f); err != nil {
		t.Fatalf("start in %s: %v", f.Name(), err)
	}
	return c
}

// wantKilled waits for c and fails unless SIGKILL ended it.
func wantKilled(t *testing.T, c *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("pid %d ended with %v, want SIGKILL", c.Process.Pid, err)
		}
	case <-time.After(10 * time.Second):
		_ = c.Process.Kill()
		t.Errorf("pid %d still runs 10s after its cgroup was killed", c.Process.Pid)
	}
}

func procsOf(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(readFile(t, filepath.Join(dir, "cgroup.procs"))) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, n)
	}
	return pids
}

func contains(pids []int, pid int) bool {
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// v2Line is the cgroup v2 line of a /proc/PID/cgroup text (a hybrid host lists v1's too).
func v2Line(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "0::") {
			return line
		}
	}
	return ""
}

// ownV2Path is this process's cgroup v2 path.
func ownV2Path(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, "/proc/self/cgroup"), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	t.Fatal("no cgroup v2 line in /proc/self/cgroup")
	return ""
}

// removeTree kills what is left under dir and removes it, deepest first.
func removeTree(t *testing.T, dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		l := &leaf{mode: LimitsV2, dirs: []string{dirs[i]}, procs: []string{filepath.Join(dirs[i], "cgroup.procs")}}
		l.kill()
		l.remove()
		if _, err := os.Lstat(dirs[i]); err == nil {
			t.Errorf("cannot remove %s", dirs[i])
		}
	}
}
