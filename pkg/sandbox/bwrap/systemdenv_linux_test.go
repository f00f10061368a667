package bwrap

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// TestSystemdRunFindsTheUserManager (S6): in a systemd scope, systemd-run gets the variables
// it reaches the user manager by (the launcher's environment is otherwise empty; bwrap's
// --clearenv keeps them from the run, TestArgsGolden). A systemd-run on PATH records its
// environment and execs the rest of its command line, as the real one does inside the scope;
// without a real scope the limits cannot be read back, and the run fails closed before its
// agent starts.
func TestSystemdRunFindsTheUserManager(t *testing.T) {
	fake := t.TempDir()
	seen := filepath.Join(fake, "env")
	script := "#!/bin/sh\nenv > " + seen + "\nwhile [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n"
	if err := os.WriteFile(filepath.Join(fake, "systemd-run"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+":"+os.Getenv("PATH"))
	bus := []string{"XDG_RUNTIME_DIR=/run/user/4242", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/4242/bus"}
	b, err := New(Config{Self: testharness.Bin(t, "anet-sandboxd"), Limits: &Mechanism{Mode: LimitsSystemd, Detail: "user systemd", busEnv: bus}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := launch.Prepare(sandbox.Spec{ID: "scope-env", Mode: sandbox.ModeSandbox, RunRoot: t.TempDir(),
		Argv: []string{"/bin/sh", "-c", "env"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Start(context.Background(), p, sandbox.Stdio{})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	o := r.Wait()
	launch.WaitSettled(r)
	got, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("systemd-run was not started: %v", err)
	}
	for _, kv := range bus {
		if !strings.Contains(string(got), kv+"\n") {
			t.Errorf("systemd-run's environment lacks %s:\n%s", kv, got)
		}
	}
	if o.Err == nil || !strings.Contains(o.Err.Error(), "systemd read back") {
		t.Errorf("outcome = %+v, want the run failed on the scope's limits read back", o)
	}
}
