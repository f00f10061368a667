package autoreply

import (
	"os"
	"path/filepath"
	"testing"

	"anet.dev/anet/pkg/agents"
)

// S3: the work dir belongs to earlier runs of the interaction, which may have planted links;
// preparing it (removing a stale answer file) must never follow one out of the work root,
// and the agent's config files are not written there at all (they go into the run's fresh
// home through Spec.HomeFiles).
func TestPrepareWorkFollowsNoLinkOut(t *testing.T) {
	root := filepath.Join(t.TempDir(), "work-sandbox")
	outside := filepath.Join(t.TempDir(), "operator-file")
	if err := os.WriteFile(outside, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := "peer/ix"
	l := agents.Launch{Files: []agents.File{{Path: ".codex/config.toml", Mode: 0o600, Content: "model = \"m\"\n"}}, Answer: agents.AnswerSource{Kind: agents.AnswerFile, File: ".anet-answer.txt"}}
	for _, c := range []struct {
		name  string
		plant func(work string)
	}{
		{"stale answer is a link out", func(work string) {
			os.Symlink(outside, filepath.Join(work, ".anet-answer.txt"))
		}},
		{"interaction dir is a link out", func(work string) {
			os.RemoveAll(work)
			os.Symlink(filepath.Dir(outside), work)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.RemoveAll(root)
			work := filepath.Join(root, sub)
			if err := os.MkdirAll(work, 0o700); err != nil {
				t.Fatal(err)
			}
			c.plant(work)
			err := prepareWork(root, sub, l)
			if b, _ := os.ReadFile(outside); string(b) != "precious" {
				t.Fatalf("prepareWork(%s) = %v and the file outside the work root now holds %q", c.name, err, b)
			}
			if _, statErr := os.Stat(outside); statErr != nil {
				t.Fatalf("prepareWork(%s) removed the file outside the work root: %v", c.name, statErr)
			}
			if _, err := os.Lstat(filepath.Join(work, ".codex")); err == nil {
				t.Fatalf("prepareWork(%s) wrote agent config into the work dir", c.name)
			}
		})
	}
}

// npm-installed agents get their package directory as the tree bound into the sandbox.
func TestPackageTree(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
		return p
	}
	scoped := mk("lib/node_modules/@openai/codex/bin/codex.js")
	plain := mk("lib/node_modules/opencode-ai/bin/opencode")
	other := mk("opt/tool/bin/tool")
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	os.Symlink(scoped, filepath.Join(dir, "bin", "codex"))
	for _, c := range []struct{ name, prog, want string }{
		{"scoped package through a link", filepath.Join(dir, "bin", "codex"), filepath.Join(dir, "lib/node_modules/@openai/codex")},
		{"plain package", plain, filepath.Join(dir, "lib/node_modules/opencode-ai")},
		{"not npm", other, ""},
		{"missing", filepath.Join(dir, "nope"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := packageTree(c.prog); got != c.want {
				t.Fatalf("packageTree(%s) = %q, want %q", c.prog, got, c.want)
			}
		})
	}
}
