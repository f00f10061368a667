package autoreply

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/agents"
	"anet.dev/anet/pkg/reasons"
)

// writeExec writes an executable file.
func writeExec(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestResolveRuntime (E10): a script agent's interpreter is found by its #! line on anetd's
// PATH or as auto_reply.agent_runtime, its version checked against the agent's table row
// before any run (agent_runtime_too_old, with the fix), and one outside the sandbox's PATH
// becomes the tree to bind and the bin dir to put first on the run's PATH.
func TestResolveRuntime(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatalf("sh is needed for the stand-in interpreters: %v", err)
	}
	dir := t.TempDir()
	node24 := writeExec(t, filepath.Join(dir, "node24", "bin", "node"), "#!/bin/sh\necho v24.21.0\n")
	node20 := writeExec(t, filepath.Join(dir, "node20", "bin", "node"), "#!/bin/sh\necho v20.20.2\n")
	bare := writeExec(t, filepath.Join(dir, "bare", "node"), "#!/bin/sh\necho v26.1.0\n")
	wrongName := writeExec(t, filepath.Join(dir, "other", "bin", "nodejs"), "#!/bin/sh\necho v24.21.0\n")
	script := writeExec(t, filepath.Join(dir, "agent", "openclaw.mjs"), "#!/usr/bin/env node\nconsole.log('hi')\n")
	absScript := writeExec(t, filepath.Join(dir, "agent", "abs.mjs"), "#!"+node20+"\n")
	wrapper := writeExec(t, filepath.Join(dir, "agent", "wrapper"), "#!/bin/sh\nexec node \"$0.mjs\" \"$@\"\n")
	native := writeExec(t, filepath.Join(dir, "agent", "native"), "\x7fELF\x02\x01\x01")
	oc, _ := agents.Lookup("openclaw")
	claude, _ := agents.Lookup("claude")
	onPath := func(p string) func(string) (string, error) {
		return func(name string) (string, error) {
			if name != "node" {
				return "", errors.New("not found")
			}
			return p, nil
		}
	}
	cases := []struct {
		name       string
		spec       agents.Spec
		prog, conf string
		look       func(string) (string, error)
		wantTree   string
		wantBin    string
		wantCode   reasons.Code
		wantErr    string
	}{
		{"node 24 found by #! on PATH", oc, script, "", onPath(node24), filepath.Join(dir, "node24"), filepath.Join(dir, "node24", "bin"), "", ""},
		{"node 20 on PATH is too old", oc, script, "", onPath(node20), "", "", reasons.AgentRuntimeTooOld, "auto_reply.agent_runtime"},
		{"agent_runtime wins over PATH", oc, script, node24, onPath(node20), filepath.Join(dir, "node24"), filepath.Join(dir, "node24", "bin"), "", ""},
		{"a tree without bin/ is its own dir", oc, script, bare, onPath(node20), filepath.Join(dir, "bare"), filepath.Join(dir, "bare"), "", ""},
		{"an absolute #! is checked too", oc, absScript, "", onPath(node24), "", "", reasons.AgentRuntimeTooOld, ""},
		{"agent_runtime named otherwise", oc, script, wrongName, onPath(node24), "", "", "", `asks for "node"`},
		{"no node anywhere", oc, script, "", func(string) (string, error) { return "", exec.ErrNotFound }, "", "", "", "install Node"},
		{"a native binary needs nothing", oc, native, "", onPath(node20), "", "", "", ""},
		{"a shell wrapper is not the runtime", oc, wrapper, "", onPath(node20), "", "", "", ""},
		{"a program that is gone is the launcher's to report", oc, filepath.Join(dir, "gone"), "", onPath(node20), "", "", "", ""},
		{"an agent without a runtime needs nothing", claude, script, "", onPath(node20), "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, err := resolveRuntime(context.Background(), c.spec, c.prog, c.conf, c.look, execVersion)
			if c.wantCode != "" || c.wantErr != "" {
				var re *reasons.Error
				switch {
				case err == nil:
					t.Fatalf("resolveRuntime = %+v, nil; want an error", rt)
				case c.wantCode != "" && (!errors.As(err, &re) || re.Code != c.wantCode):
					t.Fatalf("resolveRuntime error = %v, want code %s", err, c.wantCode)
				case !strings.Contains(err.Error(), c.wantErr):
					t.Fatalf("resolveRuntime error = %v, want it to mention %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolveRuntime = %v, want nil", err)
			}
			if rt.Tree != c.wantTree || rt.Bin != c.wantBin {
				t.Fatalf("resolveRuntime = tree %q bin %q, want %q and %q", rt.Tree, rt.Bin, c.wantTree, c.wantBin)
			}
		})
	}
}

// execVersion runs the fake interpreters here directly; in the node anet-sandboxd runs it
// (Engine.runtimeVersion).
func execVersion(ctx context.Context, program string) ([]byte, error) {
	return exec.CommandContext(ctx, program, "--version").Output()
}
