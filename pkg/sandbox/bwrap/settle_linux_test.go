package bwrap_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
)

// A run's outcome comes once its processes are gone; its dirs and cgroups are removed right
// after, and the run is settled then (launch.Settler). These tests hold the removal to that.

// manyFiles makes the run's home hold 2000 files, so that removing its dirs takes a while
// after the outcome: a check made right after Wait would see them still there.
const manyFiles = `cd "$HOME" && seq 2000 | xargs touch && `

// leaves are the run id's cgroup v1 leaves under the delegated memory and pids cgroups.
func leaves(t *testing.T, id string) []string {
	t.Helper()
	b, err := bwrap.New(bwrap.Config{Self: testharness.Bin(t, "anet-sandboxd")})
	if err != nil {
		t.Fatal(err)
	}
	m := b.Mechanism()
	return []string{filepath.Join(m.Memory, "anet-run-"+id), filepath.Join(m.Pids, "anet-run-"+id)}
}

// TestSettledRemovesDirsAndCgroups (S3, S6): a run's outcome is what it was when the removal
// came before it — the agent's exit code, the cgroup limit it ran into, the limits in force —
// and once the run is settled its dirs and cgroup leaves are gone.
func TestSettledRemovesDirsAndCgroups(t *testing.T) {
	l := newLauncher(t)
	root := t.TempDir()
	const id = "settle"
	dir := filepath.Join(root, id)
	in, feed, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	defer feed.Close()
	// Past 16 tasks a subshell's forks fail (tasks_limit, read from the leaf before it is
	// removed); then the run waits for the test before it exits 3. ": >" makes the ready file
	// without a fork.
	spec := sandbox.Spec{ID: id, Mode: sandbox.ModeSandbox, RunRoot: root, Limits: sandbox.Limits{Tasks: 16, WallClock: time.Minute},
		Argv: []string{"/bin/sh", "-c", manyFiles + `(n=0; while [ $n -lt 40 ]; do sleep 600 & n=$((n+1)); done) 2>/dev/null; : >ready; read x; exit 3`}}
	run, err := l.Start(context.Background(), spec, sandbox.Stdio{Stdin: in})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	in.Close()
	testkit.WaitWithin(t, "the run's ready file", time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(dir, "home", "ready"))
		return err == nil
	})
	for _, p := range leaves(t, id) {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			t.Fatalf("cgroup leaf %s while the run lives: %v, want a dir", p, err)
		}
	}
	feed.Close() // read gets EOF: the agent exits 3
	o := run.Wait()
	if o.ExitCode != 3 || o.Limit != sandbox.LimitTasks || o.Cgroup != sandbox.CgroupFull || o.Err != nil {
		t.Fatalf("outcome = %+v, want exit 3, limit %s, cgroup full, no error", o, sandbox.LimitTasks)
	}
	s, ok := run.(launch.Settler)
	if !ok {
		t.Fatalf("a bwrap run (%T) is not a launch.Settler", run)
	}
	select {
	case <-s.Settled():
	case <-time.After(time.Minute):
		t.Fatal("the run was not settled within a minute of its outcome")
	}
	assertGone(t, dir)
	for _, p := range leaves(t, id) {
		assertGone(t, p)
	}
	if again := run.Wait(); again != o {
		t.Fatalf("Wait after settling = %+v, want the same outcome %+v", again, o)
	}
}

// TestSettleRightAfterWait (S3): Settle called right after Wait returns only once the run's
// dirs and cgroup leaves are removed: what anet-sandboxd exec does before it exits.
func TestSettleRightAfterWait(t *testing.T) {
	l := newLauncher(t)
	root := t.TempDir()
	const id = "settle-wait"
	r, err := l.Start(context.Background(), sandbox.Spec{ID: id, Mode: sandbox.ModeSandbox, RunRoot: root,
		Argv: []string{"/bin/sh", "-c", manyFiles + "exit 0"}, Limits: sandbox.Limits{WallClock: time.Minute}}, sandbox.Stdio{})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	if o := r.Wait(); o.ExitCode != 0 || o.Err != nil {
		t.Fatalf("outcome = %+v, want exit 0", o)
	}
	l.Settle()
	assertNothingLeft(t, root, id)
}

// TestStopAllSettles (S3, S4): StopAll (serve on SIGTERM or EOF, just before it exits) kills
// every run and returns only once their dirs and cgroup leaves are removed.
func TestStopAllSettles(t *testing.T) {
	l := newLauncher(t)
	root := t.TempDir()
	ids := []string{"stop-a", "stop-b"}
	var runs []sandbox.Run
	for _, id := range ids {
		r, err := l.Start(context.Background(), sandbox.Spec{ID: id, Mode: sandbox.ModeSandbox, RunRoot: root,
			Argv: []string{"/bin/sh", "-c", manyFiles + ": >ready; exec sleep 600"}, Limits: sandbox.Limits{WallClock: time.Minute}}, sandbox.Stdio{})
		if err != nil {
			t.Fatalf("Start = %v", err)
		}
		runs = append(runs, r)
	}
	testkit.WaitWithin(t, "both runs' files written", time.Minute, func() bool {
		for _, id := range ids {
			if _, err := os.Stat(filepath.Join(root, id, "home", "ready")); err != nil {
				return false
			}
		}
		return true
	})
	l.StopAll()
	assertNothingLeft(t, root, ids...)
	for _, r := range runs {
		if o := r.Wait(); o.ExitCode != 128+9 {
			t.Errorf("killed run outcome = %+v, want exit %d", o, 128+9)
		}
	}
}

// assertNothingLeft: no run dir under root, no cgroup leaf of ids.
func assertNothingLeft(t *testing.T, root string, ids ...string) {
	t.Helper()
	if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("run root = %v, %v; want it empty", names, err)
	}
	for _, id := range ids {
		for _, p := range leaves(t, id) {
			assertGone(t, p)
		}
	}
}

// TestExecLeavesNothing (S3): `anet-sandboxd exec` settles its run before it exits: no run dir
// and no cgroup leaf of it is left, however long their removal takes.
func TestExecLeavesNothing(t *testing.T) {
	h := newHost(t)
	// Leaves an earlier test's killed launcher left (swept after a minute) are not this run's.
	execLeaves := func() map[string]bool {
		m := map[string]bool{}
		for _, p := range leaves(t, "exec-*") {
			left, _ := filepath.Glob(p)
			for _, l := range left {
				m[l] = true
			}
		}
		return m
	}
	before := execLeaves()
	if r := h.sh(nil, manyFiles+"exit 4"); r.code != 4 {
		t.Fatalf("exec = code %d stderr %q, want 4", r.code, r.stderr)
	}
	if ents, err := os.ReadDir(h.runRoot()); err != nil || len(ents) != 0 {
		t.Fatalf("run root after exec = %d entries, %v; want none", len(ents), err)
	}
	for l := range execLeaves() {
		if !before[l] {
			t.Fatalf("cgroup leaf %s left after exec, want none", l)
		}
	}
}

// TestMountNamespaceHeldUntilTheOutcome (S3): the launcher holds a live run's mount namespace
// (so tearing it down — every mount of the run — waits until the outcome is out, not the
// outcome for it), and lets go of it by the time the run is settled: no descriptor of a run's
// namespace outlives the run in the launcher.
func TestMountNamespaceHeldUntilTheOutcome(t *testing.T) {
	l := newLauncher(t)
	n := uniqueSleep()
	spec := sandbox.Spec{ID: "mntns-" + n, Mode: sandbox.ModeSandbox, RunRoot: t.TempDir(),
		Argv: []string{"/bin/sh", "-c", "sleep $((" + n + "))"}}
	before := nsFDs(t)
	r, err := l.Start(context.Background(), spec, sandbox.Stdio{})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	testkit.WaitWithin(t, "the run's sleep", 30*time.Second, func() bool { return markerAlive("sleep " + n) })
	if held := nsFDs(t) - before; held != 1 {
		r.Stop()
		launch.WaitSettled(r)
		t.Fatalf("the launcher holds %d more mount namespace descriptors while the run lives, want 1", held)
	}
	r.Stop()
	launch.WaitSettled(r)
	if left := nsFDs(t) - before; left != 0 {
		t.Fatalf("the launcher still holds %d mount namespace descriptors once the run is settled, want 0", left)
	}
}

// nsFDs counts this process's descriptors of mount namespaces.
func nsFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(l, "mnt:[") {
			n++
		}
	}
	return n
}
