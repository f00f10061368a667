package bwrap_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
)

// countBwrap puts a bwrap on h's PATH that counts its invocations in the returned file and
// runs the real one: how many sandboxes a command built.
func countBwrap(t *testing.T, h *host) string {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := "#!/bin/sh\necho x >>" + count + "\nexec /usr/bin/bwrap \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bwrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, kv := range h.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			h.env[i] = "PATH=" + dir + ":" + v
		}
	}
	return count
}

func sandboxes(t *testing.T, count string) int {
	t.Helper()
	b, err := os.ReadFile(count)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

func probeFiles(h *host) []string {
	fs, _ := filepath.Glob(filepath.Join(h.runtime, "anet", "probe", "probe-*.json"))
	return fs
}

// TestExecFoldsProbeIntoRun (S7, P2): with no passing probe cached, `exec` builds one sandbox,
// not two: the run's init runs the probe's checks there before the command, and the passing
// result is cached, so the next exec runs the command at once in one sandbox again.
func TestExecFoldsProbeIntoRun(t *testing.T) {
	h := newHost(t)
	count := countBwrap(t, h)
	work := t.TempDir()
	r := h.sh([]string{"--work", work}, "echo ran >/work/ran; echo out")
	if r.code != 0 || r.stdout != "out\n" {
		t.Fatalf("exec with no probe cached = code %d stdout %q stderr %q, want 0 and the command's output", r.code, r.stdout, r.stderr)
	}
	if n := sandboxes(t, count); n != 1 {
		t.Fatalf("exec with no probe cached built %d sandboxes, want 1 (the probe folded into the run)", n)
	}
	if fs := probeFiles(h); len(fs) != 1 {
		t.Fatalf("probe cache after a folded probe = %v, want one passing result kept", fs)
	}
	if r := h.sh(nil, "echo again"); r.code != 0 || r.stdout != "again\n" || sandboxes(t, count) != 2 {
		t.Fatalf("exec with the probe cached = code %d stdout %q, %d sandboxes in all; want 0, \"again\", 2", r.code, r.stdout, sandboxes(t, count))
	}
	if b, err := os.ReadFile(filepath.Join(work, "ran")); err != nil || string(b) != "ran\n" {
		t.Fatalf("the command's file = %q, %v; want it written", b, err)
	}
}

// TestFoldedProbeFailureKeepsAgentOut (S7, P2, F2): when a check fails in the run's own
// sandbox the command never starts: exec reports the probe's reason code, the work dir holds
// nothing the command would have written, no probe result is kept, and each weakening fails
// for its own property. The weakenings exist only in test builds (weaken_anettest.go).
func TestFoldedProbeFailureKeepsAgentOut(t *testing.T) {
	h := newHost(t)
	weak := testharness.Bin(t, "anet-sandboxd-weak")
	for _, c := range []struct {
		weaken string
		code   reasons.Code
	}{
		{"net", reasons.NetnsFailed},
		{"omit:keyctl", reasons.SeccompFailed},
		{"seccomp,userns", reasons.SeccompFailed},
	} {
		t.Run(c.weaken, func(t *testing.T) {
			work := t.TempDir()
			saved := h.env
			h.env = append(append([]string(nil), h.env...), "ANET_UNSAFE_TEST_WEAKEN="+c.weaken)
			marker := "anet-fold-" + uniqueSleep()
			r := h.exec(weak, []string{"--work", work}, "/bin/sh", "-c", "echo ran >/work/ran", marker)
			h.env = saved
			testkit.WaitWithin(t, "the refused run's processes gone", 30*time.Second, func() bool { return !markerAlive(marker) })
			if r.code != 125 || r.outcome.Code != string(c.code) || !strings.Contains(r.stderr, string(c.code)) {
				t.Fatalf("weakened (%s) exec = code %d outcome code %q stderr %q; want 125 and %s", c.weaken, r.code, r.outcome.Code, r.stderr, c.code)
			}
			if ents, err := os.ReadDir(work); err != nil || len(ents) != 0 {
				t.Fatalf("weakened (%s): work dir holds %v (%v): the command ran", c.weaken, ents, err)
			}
			if fs := probeFiles(h); len(fs) != 0 {
				t.Fatalf("weakened (%s): probe cache holds %v after a failed probe", c.weaken, fs)
			}
		})
	}
	// The same test build, unweakened, runs the command: the failures are the weakening's.
	work := t.TempDir()
	if r := h.exec(weak, []string{"--work", work}, "/bin/sh", "-c", "echo ran >/work/ran"); r.code != 0 {
		t.Fatalf("test build without weakening: exec code %d stderr %q, want 0", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "ran")); err != nil {
		t.Fatalf("test build without weakening: the command did not run: %v", err)
	}
}

// foldSpec is a run whose agent writes ran-NAME into its work dir (work/w).
func foldSpec(t *testing.T, id, work string, marker ...string) sandbox.Spec {
	return sandbox.Spec{ID: id, Mode: sandbox.ModeSandbox, RunRoot: t.TempDir(), WorkRoot: work, WorkSub: "w",
		Argv: append([]string{"/bin/sh", "-c", "echo ran >/work/ran-" + id}, marker...)}
}

// TestLauncherFoldsProbe (S7, P2): the daemon's launcher, on a cold cache, starts the run with
// the probe folded in and keeps the result (the next probe is cached).
func TestLauncherFoldsProbe(t *testing.T) {
	l := newLauncher(t)
	work := t.TempDir()
	run, err := l.Start(context.Background(), foldSpec(t, "fold", work), sandbox.Stdio{})
	if err != nil {
		t.Fatalf("Start on a cold cache = %v", err)
	}
	if o := run.Wait(); o.ExitCode != 0 || o.Err != nil {
		t.Fatalf("folded run outcome = %+v, want exit 0", o)
	}
	if _, err := os.Stat(filepath.Join(work, "w", "ran-fold")); err != nil {
		t.Fatalf("the folded run's agent did not run: %v", err)
	}
	res, err := l.Probe(context.Background())
	if err != nil || !res.OK || !res.Cached {
		t.Fatalf("Probe after a folded run = %+v, %v; want its passing result, cached", res, err)
	}
	// What exec asks before a run (S6) is what the probe found, without a probe of its own.
	b, err := bwrap.New(bwrap.Config{Self: testharness.Bin(t, "anet-sandboxd")})
	if err != nil {
		t.Fatal(err)
	}
	if b.Limits() != res.Limits || res.Limits != sandbox.CgroupFull {
		t.Fatalf("backend's Limits %q, the probe's %q; want both full (the harness delegates cgroups)", b.Limits(), res.Limits)
	}
}
