package autoreply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/agents"
	"anet.dev/anet/pkg/sandbox"
)

// S3: the work dir belongs to earlier runs of the interaction, which may have planted links;
// preparing it (removing a stale answer file) must never follow one out of the work root,
// and the agent's config files are not written there at all (they go into the run's fresh
// home through Spec.HomeFiles).
func TestPrepareWorkFollowsNoLinkOut(t *testing.T) {
	root := filepath.Join(t.TempDir(), "work-sandbox")
	// The operator's file has the answer file's name, so a removal that followed the
	// interaction dir's link out would hit it.
	outside := filepath.Join(t.TempDir(), ".anet-answer.txt")
	if err := os.WriteFile(outside, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := "peer/ix"
	l := agents.Launch{Files: []agents.File{{Path: ".codex/config.toml", Mode: 0o600, Content: "model = \"m\"\n"}}, Answer: agents.AnswerSource{Kind: agents.AnswerFile, File: ".anet-answer.txt"}}
	for _, c := range []struct {
		name  string
		plant func(work string)
		// stale: the work dir itself is real and its stale answer must be gone.
		stale bool
	}{
		{"stale answer file", func(work string) {
			os.WriteFile(filepath.Join(work, ".anet-answer.txt"), []byte("an earlier run's answer"), 0o600)
		}, true},
		{"stale answer is a link out", func(work string) {
			os.Symlink(outside, filepath.Join(work, ".anet-answer.txt"))
		}, true},
		{"interaction dir is a link out", func(work string) {
			os.RemoveAll(work)
			os.Symlink(filepath.Dir(outside), work)
		}, false},
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
			if _, err := os.Lstat(filepath.Join(work, ".anet-answer.txt")); c.stale && !os.IsNotExist(err) {
				t.Fatalf("prepareWork(%s): the stale answer is still there (%v); it would pass for this run's", c.name, err)
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

// F3: the run's placeholder never reaches the operator's detail (log, evidence chain), whole
// or in part: it is replaced before the agent's output is clipped, so a token that straddles
// the clip leaves no prefix behind.
func TestAnswerOfRedactsToken(t *testing.T) {
	const tok = "PH0123456789abcdefghijklmnopqrstuvwxyzABCD"
	text := agents.Launch{Answer: agents.AnswerSource{Kind: agents.AnswerText}}
	claude := agents.Launch{Answer: agents.AnswerSource{Kind: agents.AnswerClaudeJSON}}
	failed := sandbox.WireOutcome{Outcome: sandbox.Outcome{ExitCode: 1}}
	for _, c := range []struct {
		name   string
		res    RunResult
		launch agents.Launch
	}{
		{"stderr, whole token", RunResult{Outcome: failed, Stderr: []byte("failing with token " + tok + "\n")}, text},
		{"stderr, token across the clip", RunResult{Outcome: failed, Stderr: []byte(strings.Repeat("x", 290) + tok)}, text},
		{"claude error result, token across the clip", RunResult{Stdout: []byte(`{"type":"result","subtype":"success","is_error":true,"result":"` + strings.Repeat("y", 190) + tok + `"}`)}, claude},
	} {
		t.Run(c.name, func(t *testing.T) {
			ans, code, detail := answerOf(c.res, t.TempDir(), c.launch, tok)
			if ans != "" || code != agents.NoAnswer {
				t.Fatalf("answerOf(%s) = %q, %q, want no answer with %s", c.name, ans, code, agents.NoAnswer)
			}
			if strings.Contains(detail, tok[:6]) {
				t.Fatalf("answerOf(%s) detail = %q, want no part of the token %q", c.name, detail, tok)
			}
		})
	}
	t.Run("answer", func(t *testing.T) {
		ans, code, _ := answerOf(RunResult{Stdout: []byte("the token is " + tok)}, t.TempDir(), text, tok)
		if ans != "the token is [placeholder]" || code != "" {
			t.Fatalf("answerOf(answer with token) = %q, %q, want the token replaced", ans, code)
		}
	})
}
