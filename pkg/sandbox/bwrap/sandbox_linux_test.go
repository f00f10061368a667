package bwrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/sandbox"
)

// TestExecPassesThrough: stdout, stderr and the exit status of the command pass through
// `exec` (C4), and the run's dirs are gone afterwards (S3).
func TestExecPassesThrough(t *testing.T) {
	h := newHost(t)
	r := h.sh(nil, "echo out; echo err >&2; exit 7")
	if r.code != 7 || r.stdout != "out\n" || !strings.Contains(r.stderr, "err\n") {
		t.Fatalf("exec sh = code %d stdout %q stderr %q, want 7, \"out\\n\", \"err\\n\"", r.code, r.stdout, r.stderr)
	}
	if r.outcome.Cgroup != sandbox.CgroupFull {
		t.Fatalf("outcome cgroup = %q, want full (limits read back from the delegated cgroup, S6)", r.outcome.Cgroup)
	}
	ents, err := os.ReadDir(h.runRoot())
	if err != nil || len(ents) != 0 {
		t.Fatalf("run root after the run = %v, %v; want empty (home and tmp deleted, S3)", ents, err)
	}
}

// TestEnvironmentExact: the environment is built from empty (S5): the base names, PWD (set by
// bwrap --chdir) and the handed-in endpoint variables; nothing of the launcher's own.
func TestEnvironmentExact(t *testing.T) {
	h := newHost(t)
	h.env = append(h.env, "ANTHROPIC_API_KEY=sk-operator-secret", "HTTPS_PROXY=http://proxy.corp:3128", "LD_PRELOAD=/x.so")
	r := h.exec(h.bin, []string{"--env", "ANTHROPIC_BASE_URL=http://127.0.0.1:8080", "--env", "ANET_X=a,b"}, "/usr/bin/env")
	if r.code != 0 {
		t.Fatalf("exec env: code %d stderr %s", r.code, r.stderr)
	}
	var names []string
	for _, l := range readLines(r.stdout) {
		n, _, _ := strings.Cut(l, "=")
		names = append(names, n)
	}
	sort.Strings(names)
	want := "ANET_X ANTHROPIC_BASE_URL HOME LANG LC_ALL PATH PWD TERM TMPDIR"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("env names in the sandbox = %q, want %q", got, want)
	}
	if strings.Contains(r.stdout, "sk-operator-secret") || !strings.Contains(r.stdout, "ANET_X=a,b\n") {
		t.Fatalf("env in the sandbox = %q: leaked the launcher's env or mangled a value", r.stdout)
	}
	// A handed-in loader variable is refused (S5, decision in pkg/sandbox/env.go).
	r = h.exec(h.bin, []string{"--env", "LD_PRELOAD=/tmp/x.so"}, "/usr/bin/env")
	if r.code != 2 || !strings.Contains(r.stderr, "LD_PRELOAD") {
		t.Fatalf("exec --env LD_PRELOAD=… = code %d stderr %q, want 2 naming LD_PRELOAD", r.code, r.stderr)
	}
}

// TestWallClockKill: past the wall clock the run gets TERM (forwarded by init) and is
// reported as wall_clock (S6).
func TestWallClockKill(t *testing.T) {
	h := newHost(t)
	r := h.exec(h.bin, []string{"--timeout", "1s", "--grace", "1s"}, "/bin/sleep", "600")
	if r.outcome.Limit != sandbox.LimitWallClock || !isSignal(r.code, syscall.SIGTERM) {
		t.Fatalf("exec --timeout 1s sleep 600 = code %d limit %q, want %d and wall_clock", r.code, r.outcome.Limit, 128+15)
	}
	// A run that ignores TERM is killed after the grace period.
	r = h.sh([]string{"--timeout", "1s", "--grace", "1s"}, "trap '' TERM; sleep 600 & wait; sleep 600")
	if r.outcome.Limit != sandbox.LimitWallClock || !isSignal(r.code, syscall.SIGKILL) {
		t.Fatalf("exec TERM-ignoring run = code %d limit %q, want %d and wall_clock", r.code, r.outcome.Limit, 128+9)
	}
}

// TestDiskLimitKill: home+tmp+work growing past the disk limit stops the run (S6).
func TestDiskLimitKill(t *testing.T) {
	h := newHost(t)
	r := h.sh([]string{"--disk", "8MiB", "--timeout", "60s"},
		"i=0; while :; do dd if=/dev/zero of=/tmp/f$i bs=1M count=1 2>/dev/null; i=$((i+1)); sleep 0.05; done")
	if r.outcome.Limit != sandbox.LimitDisk || !isSignal(r.code, syscall.SIGKILL) {
		t.Fatalf("disk filler = code %d limit %q stderr %q, want %d and disk_limit", r.code, r.outcome.Limit, r.stderr, 128+9)
	}
	// RLIMIT_FSIZE bounds a single file meanwhile.
	r = h.sh([]string{"--disk", "8MiB"}, "dd if=/dev/zero of=/work/big bs=1M count=16 2>/dev/null; echo rc=$?")
	if !strings.Contains(r.stdout, "rc=153") { // 128+SIGXFSZ(25)
		t.Fatalf("16 MiB file under an 8 MiB limit: stdout %q, want dd killed by SIGXFSZ (rc=153)", r.stdout)
	}
}

// TestMemoryBomb: the classic memory bomb under a small limit is killed and reported (S6).
func TestMemoryBomb(t *testing.T) {
	h := newHost(t)
	r := h.exec(h.bin, []string{"--memory", "64MiB", "--timeout", "60s"}, "/usr/bin/tail", "/dev/zero")
	if r.outcome.Limit != sandbox.LimitMemory || !isSignal(r.code, syscall.SIGKILL) {
		t.Fatalf("tail /dev/zero under 64M = code %d limit %q stderr %q, want %d and memory_limit", r.code, r.outcome.Limit, r.stderr, 128+9)
	}
}

// TestForkBomb: the classic fork bomb under a small task limit is contained (forks fail with
// EAGAIN) and reported (S6).
func TestForkBomb(t *testing.T) {
	h := newHost(t)
	// The shell stops at its first failed fork and says so on stderr; it never gets to 200.
	r := h.sh([]string{"--tasks", "16", "--timeout", "60s"},
		"n=0; while [ $n -lt 200 ]; do sleep 600 & n=$((n+1)); done; echo started=$n")
	if r.outcome.Limit != sandbox.LimitTasks {
		t.Fatalf("fork bomb under 16 tasks = code %d limit %q stdout %q, want tasks_limit", r.code, r.outcome.Limit, r.stdout)
	}
	if strings.Contains(r.stdout, "started=") || !strings.Contains(strings.ToLower(r.stderr), "fork") {
		t.Fatalf("fork bomb stdout %q stderr %q: want the shell stopped by a failed fork", r.stdout, r.stderr)
	}
}

// TestBackgroundProcessGone: a daemonised grandchild (setsid + double fork) does not outlive
// its run (S4).
func TestBackgroundProcessGone(t *testing.T) {
	h := newHost(t)
	n := uniqueSleep()
	r := h.sh(nil, "setsid sh -c 'sleep $(("+n+")) & exit 0' </dev/null >/dev/null 2>&1 & sleep 0.2; exit 0")
	if r.code != 0 {
		t.Fatalf("exec = code %d stderr %q", r.code, r.stderr)
	}
	if markerAlive("sleep " + n) {
		t.Fatalf("daemonised 'sleep %s' survived its run", n)
	}
}

// TestKill9OfLauncherKillsRuns: SIGKILL of anet-sandboxd ends its runs within 2 s (S4 "runs
// end when the node ends"). PDEATHSIG and the pid namespace make it immediate; the
// time taken is logged.
func TestKill9OfLauncherKillsRuns(t *testing.T) {
	h := newHost(t)
	n := uniqueSleep()
	// $((N)) keeps the marker "sleep N" out of the launcher's own command line.
	c := exec.Command(h.bin, "exec", "--", "/bin/sh", "-c", "sleep $(("+n+")) & setsid sleep $(("+n+")) & wait")
	c.Env = h.env
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, "run started", 30*time.Second, func() bool { return markerAlive("sleep " + n) })
	_ = c.Process.Signal(syscall.SIGKILL)
	_ = c.Wait()
	took := testkit.WaitWithin(t, "runs gone after kill -9 of anet-sandboxd", 2*time.Second, func() bool { return !markerAlive("sleep " + n) })
	t.Logf("runs gone %v after SIGKILL of the launcher", took)
}

// TestSIGTERMStopsRuns: SIGTERM to the launcher stops its runs (S4).
func TestSIGTERMStopsRuns(t *testing.T) {
	h := newHost(t)
	n := uniqueSleep()
	c := exec.Command(h.bin, "exec", "--", "/bin/sh", "-c", "exec sleep $(("+n+"))")
	c.Env = h.env
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, "run started", 30*time.Second, func() bool { return markerAlive("sleep " + n) })
	_ = c.Process.Signal(syscall.SIGTERM)
	err := c.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+15 {
		t.Fatalf("exec after SIGTERM = %v, want exit %d (the agent got TERM)", err, 128+15)
	}
	if markerAlive("sleep " + n) {
		t.Fatalf("run survived SIGTERM of the launcher")
	}
}

// TestPlantedSymlinks: links a run plants are not followed by cleanup nor seen by the next
// run, and its home/tmp files do not reach the next run (S3).
func TestPlantedSymlinks(t *testing.T) {
	h := newHost(t)
	victimDir := filepath.Join(h.home, "victim")
	if err := os.Mkdir(victimDir, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(victimDir, "file")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(h.cache, "anet", "work-sandbox", "aid", "i1")
	script := "ln -s " + victim + " /work/file-link; ln -s " + victimDir + " /work/dir-link; ln -s / /work/root; " +
		"ln -s " + victim + " /tmp/l; ln -s " + victimDir + " $HOME/d; echo planted > $HOME/mark; echo planted > /tmp/mark"
	if r := h.sh([]string{"--work", work}, script); r.code != 0 {
		t.Fatalf("planting run: code %d stderr %q", r.code, r.stderr)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Fatalf("victim after cleanup = %q, %v; want untouched", b, err)
	}
	if ents, _ := os.ReadDir(h.runRoot()); len(ents) != 0 {
		t.Fatalf("run root after the run has %d entries, want 0", len(ents))
	}
	r := h.sh([]string{"--work", work}, "cat /work/file-link 2>&1; ls /work/dir-link/ 2>&1; ls $HOME/mark /tmp/mark 2>&1; echo end")
	for _, want := range []string{"cat: /work/file-link: No such file or directory", "ls: cannot access '/work/dir-link/': No such file or directory",
		"cannot access '/home/agent/mark'", "cannot access '/tmp/mark'"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("next run saw the planted files: stdout %q, want %q", r.stdout, want)
		}
	}
	// Retention of the work root removes the links, not their targets.
	removed, err := linksafe.RemoveExpired(filepath.Dir(filepath.Dir(work)), time.Minute, time.Now().Add(time.Hour))
	if err != nil || len(removed) != 2 {
		t.Fatalf("RemoveExpired = %v, %v; want the work dir and its aid dir", removed, err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Fatalf("victim after retention = %q, %v; want untouched", b, err)
	}
	assertGone(t, work)
}

// TestNoInheritedFds: an fd the launcher inherited (from a shell, from anetd) does not reach
// the sandbox (docs/architecture.md rule 2; the status pipe stays bwrap's).
func TestNoInheritedFds(t *testing.T) {
	h := newHost(t)
	f, err := os.Open(h.home)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := exec.Command(h.bin, "exec", "--", "/bin/ls", "/proc/self/fd")
	c.Env = h.env
	c.ExtraFiles = []*os.File{f, f, f, f, f, f, f, f} // fds 3-10 in the launcher
	out, err := c.Output()
	if err != nil {
		t.Fatalf("exec ls: %v", err)
	}
	if got := strings.Fields(string(out)); strings.Join(got, " ") != "0 1 2 3" { // 3 is ls's own dir
		t.Fatalf("fds in the sandbox = %v, want 0 1 2 3", got)
	}
}

// TestNoBwrap: without bubblewrap the launcher refuses with no_bwrap (F2, L1).
func TestNoBwrap(t *testing.T) {
	h := newHost(t)
	h.env = append(h.env, "PATH=/nonexistent")
	r := h.exec(h.bin, nil, "/bin/true")
	if r.code != 125 || r.outcome.Code != "no_bwrap" {
		t.Fatalf("exec without bwrap in PATH = code %d outcome %+v, want 125 and no_bwrap", r.code, r.outcome)
	}
}

// TestNoRunInit (F2, C4): anet-sandboxd without anet-runinit beside it starts nothing and
// says so with no_run_init, which names the fix.
func TestNoRunInit(t *testing.T) {
	h := newHost(t)
	dir := t.TempDir()
	alone := filepath.Join(dir, "anet-sandboxd")
	b, err := os.ReadFile(h.bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	r := h.exec(alone, nil, "/bin/true")
	if r.code != 125 || r.outcome.Code != "no_run_init" {
		t.Fatalf("exec without anet-runinit beside it = code %d outcome %+v stderr %q, want 125 and no_run_init", r.code, r.outcome, r.stderr)
	}
}

// TestWritablePlaces: a run writes only its home, tmp and work dir (and /dev/shm, memory); the
// root, /dev, /run/anet and the system dirs are read-only (S3).
func TestWritablePlaces(t *testing.T) {
	h := newHost(t)
	script := `for p in /x /run/anet/x /usr/x /etc/x /home/x /dev/x; do (: >"$p") 2>/dev/null && echo "wrote $p"; done
for p in "$HOME/x" /tmp/x /work/x /dev/shm/x; do (: >"$p") || echo "cannot write $p"; done; echo done`
	r := h.sh(nil, script)
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("writable places: code %d stdout %q, want only home, tmp and work writable", r.code, r.stdout)
	}
}

// TestRunNoCoreDumps: the run's init sets its RLIMIT_CORE to 0 itself before the agent, whatever
// it inherited: here `exec` starts with a raised soft core limit, as from an operator's shell,
// and the agent must still see 0 soft and hard, so no core file carries a run's memory to disk.
func TestRunNoCoreDumps(t *testing.T) {
	h := newHost(t)
	r := h.command("/bin/sh", "-c", `ulimit -S -c unlimited && exec "$@"`, "sh",
		h.bin, "exec", "--", "/bin/cat", "/proc/self/limits")
	if r.code != 0 {
		t.Fatalf("exec cat /proc/self/limits with core unlimited = code %d stderr %q", r.code, r.stderr)
	}
	for _, l := range readLines(r.stdout) {
		if f, ok := strings.CutPrefix(l, "Max core file size"); ok {
			if got := strings.Fields(f); len(got) < 2 || got[0] != "0" || got[1] != "0" {
				t.Fatalf("core limit in the run = %q, want soft 0 and hard 0", f)
			}
			return
		}
	}
	t.Fatalf("no core limit line in the run's /proc/self/limits: %q", r.stdout)
}

// TestExecRefusesAgentTreeInNodeDirs: `exec` hides the node's own dirs exactly as anetd does
// (pkg/config paths): an agent installed inside the data, config or runtime dir is refused
// before anything starts, since binding its tree would show the store, keys or token (S3, F3).
func TestExecRefusesAgentTreeInNodeDirs(t *testing.T) {
	h := newHost(t)
	for _, c := range []struct{ name, dir string }{
		{"data", filepath.Join(h.home, ".local", "share", "anet")},
		{"config", filepath.Join(h.home, ".config", "anet")},
		{"runtime", filepath.Join(h.runtime, "anet")},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := filepath.Join(c.dir, "agent")
			if err := os.MkdirAll(tree, 0o700); err != nil {
				t.Fatal(err)
			}
			prog := filepath.Join(tree, "agent.sh")
			if err := os.WriteFile(prog, []byte("#!/bin/sh\necho ran\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			r := h.exec(h.bin, []string{"--agent-tree", tree}, prog)
			if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, "must never be visible") {
				t.Fatalf("exec with the agent tree in the %s dir = code %d stdout %q stderr %q, want 125 and a refusal", c.name, r.code, r.stdout, r.stderr)
			}
		})
	}
}
