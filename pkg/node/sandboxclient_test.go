package node

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/remote"
	"anet.dev/anet/pkg/store"
)

func startSandboxd(t *testing.T, path string) *remote.Client {
	t.Helper()
	sup := privsep.StartHelper(context.Background(), privsep.HelperSpec{
		Name: "sandboxd", Path: testharness.Bin(t, "anet-sandboxd"), Args: []string{"serve"},
		Env: []string{"PATH=" + path, "LANG=C.UTF-8"},
	}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { sup.Stop(context.Background()) })
	if !testkit.Until(testkit.Wait, func() bool { return sup.Status().State == privsep.StateRunning }) {
		t.Fatalf("sandboxd not running: %+v", sup.Status())
	}
	return remote.NewClient(sup)
}

func runSpec(t *testing.T, argv ...string) sandbox.Spec {
	dir := t.TempDir()
	return sandbox.Spec{
		ID: "t" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", ""), Mode: sandbox.ModeSandbox, Argv: argv,
		RunRoot: filepath.Join(dir, "runs"), WorkRoot: filepath.Join(dir, "work"), WorkSub: "peer/interaction",
		Limits: sandbox.Limits{WallClock: 60 * time.Second},
	}
}

// anetd starts nothing itself: a run goes through anet-sandboxd (the remote Launcher),
// inside the sandbox, and comes back with the agent's output and exit status.
func TestSandboxClientRunsInSandbox(t *testing.T) {
	c := startSandboxd(t, "/usr/local/bin:/usr/bin:/bin")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.Probe(ctx)
	if err != nil || !res.OK {
		t.Fatalf("probe = %+v, %v", res, err)
	}
	spec := runSpec(t, "/bin/sh", "-c", `echo "answer from $(hostname) in $(pwd) with $(cat ~/.agent/config.toml) $(stat -c %a ~/.agent/config.toml)"; echo oops >&2; exit 3`)
	spec.HomeFiles = []sandbox.HomeFile{{Path: ".agent/config.toml", Mode: 0o600, Content: []byte("model=pinned")}}
	os.MkdirAll(spec.WorkRoot, 0o700)
	r, err := sandbox.RunToEnd(ctx, c, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome.ExitCode != 3 {
		t.Fatalf("exit code = %d (%+v), want 3", r.Outcome.ExitCode, r.Outcome)
	}
	if got := strings.TrimSpace(string(r.Stdout)); got != "answer from anet-run in /work with model=pinned 600" {
		t.Fatalf("stdout = %q, want the sandbox's hostname, work dir and the home file written 0600", got)
	}
	if strings.TrimSpace(string(r.Stderr)) != "oops" {
		t.Fatalf("stderr = %q", r.Stderr)
	}
}

// P2, F1: with bubblewrap unavailable nothing starts and the error carries the reason.
func TestSandboxClientFailsClosedWithoutBwrap(t *testing.T) {
	c := startSandboxd(t, t.TempDir()) // a PATH with no bwrap in it
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	marker := filepath.Join(t.TempDir(), "ran")
	spec := runSpec(t, "/bin/sh", "-c", "touch "+marker)
	os.MkdirAll(spec.WorkRoot, 0o700)
	_, err := sandbox.RunToEnd(ctx, c, spec)
	var pe *privsep.Error
	if !errors.As(err, &pe) || pe.Code != reasons.NoBwrap {
		t.Fatalf("run without bwrap = %v, want no_bwrap", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the sandbox is unavailable")
	}
}

func TestRootWarning(t *testing.T) {
	if w := rootWarnings(0); len(w) != 1 || w[0].Code != string(RunningAsRoot) {
		t.Fatalf("rootWarnings(0) = %v, want running_as_root", w)
	}
	if w := rootWarnings(1000); len(w) != 0 {
		t.Fatalf("rootWarnings(1000) = %v, want none", w)
	}
}

// The control API's evidence form: every field, hashes in hex, the signature in base64.
func TestEvidenceJSON(t *testing.T) {
	e := store.Entry{Seq: 7, Time: time.Unix(1, 0).UTC(), Kind: "operator_note", Peer: "", Interaction: "ix",
		Details: []byte(`{"text":"hi"}`), PrevHash: [32]byte{1}, Hash: [32]byte{2}, Sig: []byte{3, 4}}
	got := evidenceJSON(e)
	if got.Seq != 7 || got.Kind != "operator_note" || got.Interaction != "ix" || string(got.Details) != `{"text":"hi"}` ||
		got.PrevHash != hex.EncodeToString(e.PrevHash[:]) || got.Hash != hex.EncodeToString(e.Hash[:]) || got.Sig != "AwQ=" || !got.Time.Equal(e.Time) {
		t.Fatalf("evidenceJSON = %+v", got)
	}
}
