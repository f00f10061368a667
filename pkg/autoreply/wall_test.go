package autoreply

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/store"
)

// S7, F1, F2: while the node's last proof of the wall stands failed (Options.Wall), a
// sandboxed turn whose probe passes is still not started: the requester gets
// sandbox_unavailable, the operator wall_unproven with the failed item in the chain and in
// status. A trusted peer's direct turn starts no sandbox and is not held back. Once the wall
// is proved again the sandboxed turn runs.
func TestWallUnprovenStopsSandboxedTurnsS7(t *testing.T) {
	sb := &heldSandbox{started: make(chan struct{}, 4), release: make(chan struct{})}
	close(sb.release)
	c := config.Default().AutoReply
	led := testLedger(t)
	dir := t.TempDir()
	var unproven atomic.Bool
	unproven.Store(true)
	const item = "sandbox.attack.af_vsock failed: socket(AF_VSOCK) succeeded; fix: anet-sandboxd self-test"
	e, err := New(Options{
		Config: c, Sandbox: sb, Endpoints: &recEndpoints{}, Completer: noCompleter{}, Ledger: led,
		Dirs:     Dirs{SandboxWork: filepath.Join(dir, "ws"), DirectWork: filepath.Join(dir, "w"), RunRoot: filepath.Join(dir, "runs")},
		LookPath: func(name string) (string, error) { return "/opt/agents/" + name, nil },
		Wall: func() *reasons.Error {
			if unproven.Load() {
				return reasons.New(reasons.WallUnproven, item)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ans := &doneAnswers{replies: map[string]string{}, refused: map[string]reasons.Code{}, done: make(chan string, 4)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stranger, friend := newAID(t), newAID(t)

	e.HandleTask(ctx, peer.Task{Peer: stranger, Interaction: "ix-closed", Text: "hi"}, ans)
	if got := ans.refused["ix-closed"]; got != reasons.SandboxUnavailable {
		t.Fatalf("requester got %q, want %s", got, reasons.SandboxUnavailable)
	}
	if n := len(sb.specs); n != 0 {
		t.Fatalf("%d runs started while the wall is unproven, want none", n)
	}
	refused, err := led.Store.List(ctx, store.ListOptions{Kind: KindTurnRefused})
	if err != nil || len(refused) != 1 {
		t.Fatalf("turn_refused entries = %d, %v; want 1", len(refused), err)
	}
	var d struct{ Code, Reason, Detail string }
	json.Unmarshal(refused[0].Details, &d)
	if d.Code != string(reasons.SandboxUnavailable) || d.Reason != string(reasons.WallUnproven) || !strings.Contains(d.Detail, "sandbox.attack.af_vsock") || !strings.Contains(d.Detail, "fix:") {
		t.Fatalf("turn_refused details = %+v, want sandbox_unavailable for wall_unproven naming the item and its fix", d)
	}
	st, err := e.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range st.Events {
		found = found || ev.Code == reasons.WallUnproven && ev.Detail == item
	}
	if !found || !st.Sandbox.OK {
		t.Fatalf("status events %+v, sandbox %+v; want wall_unproven with the item, and the probe itself passing", st.Events, st.Sandbox)
	}

	// A trusted peer's direct turn (the default for trusted peers) is the operator's own
	// program: no sandbox, no wall.
	e.HandleTask(ctx, peer.Task{Peer: friend, Interaction: "ix-direct", Text: "hi", Trusted: true}, ans)
	if ans.replies["ix-direct"] != "the answer" || len(sb.specs) != 1 || sb.specs[0].Mode != sandbox.ModeDirect {
		t.Fatalf("trusted direct turn: reply %q, refused %q, runs %d; want it answered by a direct run", ans.replies["ix-direct"], ans.refused["ix-direct"], len(sb.specs))
	}

	// Proved again: the sandboxed turn runs.
	unproven.Store(false)
	e.HandleTask(ctx, peer.Task{Peer: stranger, Interaction: "ix-open", Text: "hi"}, ans)
	if ans.replies["ix-open"] != "the answer" || len(sb.specs) != 2 || sb.specs[1].Mode != sandbox.ModeSandbox {
		t.Fatalf("after a passing proof: reply %q, refused %q, runs %d; want a sandboxed run's answer", ans.replies["ix-open"], ans.refused["ix-open"], len(sb.specs))
	}
}
