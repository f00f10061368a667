package bwrap_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
)

// TestUserManagerAskedOncePerStart (S6): the limits mechanism is chosen when the backend is
// made, once per helper start (serve, or the one-shot exec), never per launch. A user
// manager's socket is there and a systemctl on PATH logs every question and answers
// "offline": after the backend is made and three runs have started, it was asked once.
func TestUserManagerAskedOncePerStart(t *testing.T) {
	newHost(t)
	fake := t.TempDir()
	calls := filepath.Join(fake, "calls")
	for name, script := range map[string]string{
		"systemctl":   "#!/bin/sh\necho \"systemctl $*\" >> " + calls + "\necho offline\n",
		"systemd-run": "#!/bin/sh\necho \"systemd-run $*\" >> " + calls + "\nexit 1\n",
	} {
		if err := os.WriteFile(filepath.Join(fake, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rt := t.TempDir()
	if err := os.WriteFile(filepath.Join(rt, "bus"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("PATH", fake+":"+os.Getenv("PATH"))
	b, err := bwrap.New(bwrap.Config{Self: testharness.Bin(t, "anet-sandboxd")})
	if err != nil {
		t.Fatal(err)
	}
	if m := b.Mechanism(); m.Mode != bwrap.LimitsV1 || !strings.Contains(m.Detail, `no systemd user scope: user manager state "offline"`) {
		t.Fatalf("mechanism = %+v, want cgroup v1 saying the user manager is offline", m)
	}
	for i := range 3 {
		p, err := launch.Prepare(sandbox.Spec{ID: "once-" + uniqueSleep() + "-" + string(rune('a'+i)), Mode: sandbox.ModeSandbox,
			RunRoot: t.TempDir(), Argv: []string{"/bin/true"}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Start(context.Background(), p, sandbox.Stdio{})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if o := r.Wait(); o.ExitCode != 0 || o.Err != nil {
			t.Fatalf("run %d: %+v", i, o)
		}
		launch.WaitSettled(r)
	}
	got, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "systemctl --user is-system-running\n" {
		t.Errorf("asked of systemd over the backend's life:\n%s\nwant one is-system-running, at its making", got)
	}
}
