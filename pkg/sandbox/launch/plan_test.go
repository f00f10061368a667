package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/sandbox"
)

// TestPrepare (S3, F3): a start's one check resolves the program, its tree and the endpoint to
// real paths, and refuses what a run may not see, naming the rule: a program reached through
// a link is exposed at its real tree, a hidden dir never becomes an agent tree, an endpoint
// that is not a socket is refused, and a direct run needs its work root.
func TestPrepare(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(base, "agent", "v1")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(tree, "agent")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "agent-link")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	spec := sandbox.Spec{ID: "p1", Mode: sandbox.ModeSandbox, Argv: []string{link, "-p"}, RunRoot: base}
	p, err := Prepare(spec)
	if err != nil {
		t.Fatalf("Prepare = %v", err)
	}
	if h := p.Host(); h.Prog != prog || h.AgentTree != tree {
		t.Fatalf("host paths = %+v, want program %s in tree %s", h, prog, tree)
	}
	if got := p.Argv(); got[0] != prog || got[1] != "-p" {
		t.Fatalf("Argv = %q, want the resolved program first", got)
	}

	hidden := spec
	hidden.Hidden = []string{filepath.Join(base, "agent")}
	if _, err := Prepare(hidden); err == nil || !strings.Contains(err.Error(), "must never be visible") {
		t.Fatalf("Prepare with the tree under a hidden dir = %v, want the hidden-dir refusal", err)
	}
	notSock := spec
	notSock.Endpoint, notSock.Port = prog, 8080
	if _, err := Prepare(notSock); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Prepare with a file as endpoint = %v, want not a socket", err)
	}
	bad := spec
	bad.ID = "../x"
	if _, err := Prepare(bad); err == nil || !strings.Contains(err.Error(), "id") {
		t.Fatalf("Prepare with a bad id = %v, want the spec's own refusal", err)
	}
	direct := spec
	direct.Mode = sandbox.ModeDirect
	if _, err := Prepare(direct); err == nil || !strings.Contains(err.Error(), "work_root") {
		t.Fatalf("Prepare(direct) without a work root = %v, want work_root", err)
	}
}

// TestExitConvention: every backend reads a status by the shell's convention alike.
func TestExitConvention(t *testing.T) {
	for status, sig := range map[int]int{0: 0, 1: 0, 128: 0, 130: 2, 137: 9, 128 + 64: 64, 128 + 65: 0, 255: 0} {
		if got := SignalOf(status); got != sig {
			t.Errorf("SignalOf(%d) = %d, want %d", status, got, sig)
		}
	}
	if st, sig := Killed(); st != 137 || sig != 9 {
		t.Errorf("Killed() = %d, %d; want 137, 9", st, sig)
	}
}
