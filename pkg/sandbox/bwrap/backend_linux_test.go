package bwrap_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
)

// newLauncher is the Launcher anet-sandboxd's serve uses, with this backend.
func newLauncher(t *testing.T) *launch.Launcher {
	t.Helper()
	newHost(t) // host checks: bwrap and a delegated cgroup
	self := testharness.Bin(t, "anet-sandboxd")
	b, err := bwrap.New(bwrap.Config{Self: self})
	if err != nil {
		t.Fatal(err)
	}
	if b.Mechanism().Mode != bwrap.LimitsV1 {
		t.Fatalf("limits mechanism = %+v, want cgroup1 (the harness delegates v1 memory+pids)", b.Mechanism())
	}
	l, err := launch.New(launch.Options{Backend: bwrap.Name, Self: self})
	if err != nil {
		t.Fatal(err)
	}
	if l.BackendName() != bwrap.Name {
		t.Fatalf("launcher backend = %q, want %s", l.BackendName(), bwrap.Name)
	}
	t.Cleanup(l.Settle) // no run's dirs or cgroups outlive its test
	return l
}

// TestLauncherProbeCached: the Go API's probe passes and is cached per configuration (S7).
func TestLauncherProbeCached(t *testing.T) {
	l := newLauncher(t)
	first, err := l.Probe(context.Background())
	if err != nil || !first.OK || first.Cached {
		t.Fatalf("Probe = %+v, %v; want a fresh passing probe", first, err)
	}
	second, err := l.Probe(context.Background())
	if err != nil || !second.OK || !second.Cached || second.ConfigHash != first.ConfigHash {
		t.Fatalf("second Probe = %+v, %v; want the cached result", second, err)
	}
}

// TestRelayHalfClose: init relays 127.0.0.1:P inside the run to the bound endpoint socket,
// keeping each direction open until its own EOF (E1's path).
func TestRelayHalfClose(t *testing.T) {
	l := newLauncher(t)
	if _, err := exec.LookPath("socat"); err != nil {
		t.Fatalf("socat is needed inside the sandbox for this test: %v", err)
	}
	dir := t.TempDir()
	ep := filepath.Join(dir, "endpoint.sock")
	ln, err := net.Listen("unix", ep)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	testkit.Serve(ln, func(c net.Conn) {
		b, _ := io.ReadAll(c) // until the agent half-closes
		c.Write([]byte("endpoint got: " + string(b)))
	})
	spec := sandbox.Spec{ID: "relay", Mode: sandbox.ModeSandbox, RunRoot: filepath.Join(dir, "runs"),
		Argv:     []string{"/bin/sh", "-c", "printf 'hello' | socat -t5 - TCP:127.0.0.1:18080"},
		Endpoint: ep, Port: 18080, Limits: sandbox.Limits{WallClock: time.Minute}}
	var out, errb bytes.Buffer
	run, err := l.Start(context.Background(), spec, sandbox.Stdio{Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	o := run.Wait()
	if o.ExitCode != 0 || out.String() != "endpoint got: hello" {
		t.Fatalf("relay run = exit %d stdout %q stderr %q, want 0 and %q", o.ExitCode, out.String(), errb.String(), "endpoint got: hello")
	}
}

// TestStopAll: ending the launcher's runs (serve on SIGTERM or EOF of fd 3) leaves nothing.
func TestStopAll(t *testing.T) {
	l := newLauncher(t)
	n := uniqueSleep()
	var runs []sandbox.Run
	for i := 0; i < 2; i++ {
		spec := sandbox.Spec{ID: "ka" + string(rune('0'+i)), Mode: sandbox.ModeSandbox, RunRoot: t.TempDir(),
			Argv: []string{"/bin/sh", "-c", "setsid sleep $((" + n + ")) & sleep $((" + n + "))"}}
		r, err := l.Start(context.Background(), spec, sandbox.Stdio{})
		if err != nil {
			t.Fatalf("Start = %v", err)
		}
		runs = append(runs, r)
	}
	testkit.WaitWithin(t, "runs started", 30*time.Second, func() bool { return markerAlive("sleep " + n) })
	l.StopAll()
	for _, r := range runs {
		if o := r.Wait(); o.ExitCode != 128+9 {
			t.Errorf("killed run outcome = %+v, want exit %d", o, 128+9)
		}
	}
	if markerAlive("sleep " + n) {
		t.Fatalf("a process survived StopAll")
	}
}

// TestStartRefusesHiddenAgentTree: an agent installed under the data dir is refused (S3, F3).
func TestStartRefusesHiddenAgentTree(t *testing.T) {
	l := newLauncher(t)
	data := t.TempDir()
	spec := sandbox.Spec{ID: "hid", Mode: sandbox.ModeSandbox, RunRoot: t.TempDir(),
		Argv: []string{"/bin/true"}, AgentTree: data, Hidden: []string{filepath.Join(data, "anet")}}
	spec.Argv = []string{testharness.Bin(t, "anet-sandboxd")}
	spec.AgentTree = filepath.Dir(spec.Argv[0])
	spec.Hidden = []string{spec.AgentTree}
	_, err := l.Start(context.Background(), spec, sandbox.Stdio{})
	if err == nil || !strings.Contains(err.Error(), "must never be visible") {
		t.Fatalf("Start with the agent tree = a hidden dir: %v, want a refusal", err)
	}
}

// TestRunBornInItsCgroups (S6): on cgroup v1 the whole run — bwrap, init, the agent and what it
// forks — is born in the run's own memory and pids cgroups (startBorn: the launcher's starting
// thread joins them, forks bwrap, and joins back), so nothing of the run ever runs outside its
// limits; and nothing of the launcher stays in them, or a run's end (which kills what is left
// in its cgroups) would reach the launcher. Seen from outside, since inside the run's cgroup
// namespace starts at its own leaf: the run sees only "/" of every hierarchy.
func TestRunBornInItsCgroups(t *testing.T) {
	l := newLauncher(t)
	n := uniqueSleep()
	id := "born-" + n
	spec := sandbox.Spec{ID: id, Mode: sandbox.ModeSandbox, RunRoot: t.TempDir(),
		Argv: []string{"/bin/sh", "-c", "cat /proc/self/cgroup; sleep $((" + n + ")) & exec sleep $((" + n + "+1))"}}
	var out bytes.Buffer
	r, err := l.Start(context.Background(), spec, sandbox.Stdio{Stdout: &out})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	defer r.Wait()
	defer r.Stop()
	m := bwrap.SetUpLimits()
	leaves := []string{filepath.Join(m.Memory, "anet-run-"+id), filepath.Join(m.Pids, "anet-run-"+id)}
	comms := func(leaf string) (map[string]int, bool) {
		b, err := os.ReadFile(filepath.Join(leaf, "cgroup.procs"))
		if err != nil {
			t.Fatalf("read the run's cgroup: %v", err)
		}
		got, self := map[string]int{}, false
		for _, f := range strings.Fields(string(b)) {
			if f == strconv.Itoa(os.Getpid()) {
				self = true
			}
			c, _ := os.ReadFile(filepath.Join("/proc", f, "cmdline"))
			got[string(bytes.ReplaceAll(bytes.TrimRight(c, "\x00"), []byte{0}, []byte{' '}))]++
		}
		return got, self
	}
	want := []string{"sleep " + n, "sleep " + strconv.Itoa(mustAtoi(t, n)+1)}
	for _, leaf := range leaves {
		testkit.WaitWithin(t, "the agent and its child in "+leaf+", and not the launcher", 30*time.Second, func() bool {
			got, self := comms(leaf)
			return got[want[0]] == 1 && got[want[1]] == 1 && !self
		})
		got, _ := comms(leaf)
		for cmd := range got {
			argv0, _, _ := strings.Cut(cmd, " ")
			if argv0 != "sleep" && filepath.Base(argv0) != "bwrap" && argv0 != sandbox.SandboxInit {
				t.Errorf("%s holds %q, which is not of the run", leaf, cmd)
			}
		}
	}
	for _, f := range mustReadDir(t, "/proc/self/task") {
		b, _ := os.ReadFile(filepath.Join("/proc/self/task", f, "cgroup"))
		if strings.Contains(string(b), "anet-run-"+id) {
			t.Errorf("launcher thread %s is in the run's cgroups:\n%s", f, b)
		}
	}
	r.Stop()
	r.Wait()
	for _, line := range readLines(out.String()) {
		if !strings.HasSuffix(line, ":/") {
			t.Errorf("the run sees cgroup %q, want only its own root", line)
		}
	}
	if len(readLines(out.String())) == 0 {
		t.Errorf("the run printed no /proc/self/cgroup")
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestFailedStepUndoesTheEarlierOnes (S3, S6): a start applies its plan as named steps; when
// one fails (here args, on a hostname bwrap would refuse) after the run's dirs, cgroups,
// seccomp memfds and pipes were made, the error names the step and nothing of the run is
// left: no dirs, no cgroup leaves, no open descriptor.
func TestFailedStepUndoesTheEarlierOnes(t *testing.T) {
	newHost(t)
	b, err := bwrap.New(bwrap.Config{Self: testharness.Bin(t, "anet-sandboxd"), Hostname: "a b"})
	if err != nil {
		t.Fatal(err)
	}
	id := "undo-" + uniqueSleep()
	root := t.TempDir()
	p, err := launch.Prepare(sandbox.Spec{ID: id, Mode: sandbox.ModeSandbox, RunRoot: root, Argv: []string{"/bin/true"},
		Env: []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:8080"}, Port: 8080})
	if err != nil {
		t.Fatal(err)
	}
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	before := fds()
	if _, err := b.Start(context.Background(), p, sandbox.Stdio{}); err == nil || !strings.Contains(err.Error(), "start "+id+": args: ") ||
		!strings.Contains(err.Error(), "hostname") {
		t.Fatalf("Start with a bad hostname = %v, want the args step's refusal", err)
	}
	if after := fds(); after != before {
		t.Errorf("descriptors open: %d before the start, %d after it failed", before, after)
	}
	if _, err := os.Lstat(filepath.Join(root, id)); !os.IsNotExist(err) {
		t.Errorf("the run's dir is left after the failed start: %v", err)
	}
	m := bwrap.SetUpLimits()
	for _, leaf := range []string{filepath.Join(m.Memory, "anet-run-"+id), filepath.Join(m.Pids, "anet-run-"+id)} {
		if _, err := os.Lstat(leaf); !os.IsNotExist(err) {
			t.Errorf("the run's cgroup %s is left after the failed start: %v", leaf, err)
		}
	}
}
