package bwrap_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os/exec"
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
