package autoreply

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// noKeyEndpoints refuses every run as anet-egress does without a key for the upstream.
type noKeyEndpoints struct{ recEndpoints }

func (*noKeyEndpoints) Open(context.Context, egresswire.Policy) (egresswire.OpenReply, error) {
	return egresswire.OpenReply{}, reasons.New(reasons.NoAPIKey, "no anthropic key")
}

// F1, F2, B7: a turn the policy sends to the sandbox that cannot run (the agent is not
// installed, or there is no key) is refused to the requester with sandbox_unavailable, which
// they may send again later, and is not counted; the operator's reason (agent_missing with
// the install command, no_api_key) is in the chain, for anet show, and in the engine's
// status, for anet status. A trusted peer's direct turn with no agent stays in the inbox for
// the operator to answer.
func TestSandboxTurnThatCannotRunIsRefusedWithTheReason(t *testing.T) {
	for _, tc := range []struct {
		name      string
		trusted   bool
		lookPath  func(string) (string, error)
		endpoints Endpoints
		refused   bool
		reason    reasons.Code
		detail    string
	}{
		{"agent missing", false, func(string) (string, error) { return "", exec.ErrNotFound }, &recEndpoints{}, true, AgentMissing, "install:"},
		{"no key", false, func(n string) (string, error) { return "/opt/agents/" + n, nil }, &noKeyEndpoints{}, true, reasons.NoAPIKey, "no anthropic key"},
		{"agent missing, trusted direct", true, func(string) (string, error) { return "", exec.ErrNotFound }, &recEndpoints{}, false, AgentMissing, "install:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Default().AutoReply
			c.Trusted = config.ModeDirect
			led := testLedger(t)
			dir := t.TempDir()
			e, err := New(Options{
				Config: c, Sandbox: &heldSandbox{started: make(chan struct{}, 1), release: make(chan struct{})}, Endpoints: tc.endpoints,
				Completer: noCompleter{}, Ledger: led, LookPath: tc.lookPath,
				Dirs: Dirs{SandboxWork: filepath.Join(dir, "ws"), DirectWork: filepath.Join(dir, "w"), RunRoot: filepath.Join(dir, "runs")},
			})
			if err != nil {
				t.Fatal(err)
			}
			ans := &doneAnswers{replies: map[string]string{}, refused: map[string]reasons.Code{}, done: make(chan string, 1)}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			e.HandleTask(ctx, peer.Task{Peer: newAID(t), Interaction: "ix-1", Text: "hi", Trusted: tc.trusted}, ans)

			got, told := ans.refused["ix-1"]
			if tc.refused && (!told || got != reasons.SandboxUnavailable) {
				t.Fatalf("requester got %q (told %v), want %s", got, told, reasons.SandboxUnavailable)
			}
			if !tc.refused && (told || len(ans.replies) > 0) {
				t.Fatalf("requester got refusal %q / replies %v, want nothing: the task waits in the inbox", got, ans.replies)
			}
			st, err := e.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ev *Event
			for i := range st.Events {
				if st.Events[i].Code == tc.reason {
					ev = &st.Events[i]
				}
			}
			if ev == nil || !strings.Contains(ev.Detail, tc.detail) {
				t.Fatalf("status events = %+v, want %s with %q", st.Events, tc.reason, tc.detail)
			}
			refusedEntries, err := led.Store.List(ctx, store.ListOptions{Kind: KindTurnRefused})
			if err != nil {
				t.Fatal(err)
			}
			completed, err := led.Store.List(ctx, store.ListOptions{Kind: "turn_completed"})
			if err != nil {
				t.Fatal(err)
			}
			if len(completed) != 0 {
				t.Fatalf("turn_completed entries = %d, want none: a turn that could not run is not counted", len(completed))
			}
			if !tc.refused {
				if len(refusedEntries) != 0 {
					t.Fatalf("turn_refused entries = %d for a held task, want none", len(refusedEntries))
				}
				return
			}
			if len(refusedEntries) != 1 {
				t.Fatalf("turn_refused entries = %d, want 1", len(refusedEntries))
			}
			var d struct{ Code, Reason, Detail string }
			if err := json.Unmarshal(refusedEntries[0].Details, &d); err != nil {
				t.Fatal(err)
			}
			if d.Code != string(reasons.SandboxUnavailable) || d.Reason != string(tc.reason) || !strings.Contains(d.Detail, tc.detail) {
				t.Fatalf("turn_refused details = %+v, want code %s, reason %s, detail with %q", d, reasons.SandboxUnavailable, tc.reason, tc.detail)
			}
		})
	}
}
