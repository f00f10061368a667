package autoreply

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
)

// turnObserver records what an Observer hears.
type turnObserver struct {
	mu       sync.Mutex
	ended    []string // "route outcome timed|untimed"
	refusals map[string]int64
	models   int // model requests timed from receipts
}

func (o *turnObserver) ObserveModelRequest(time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.models++
}

func (o *turnObserver) RunEnded(route, outcome string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	timed := "untimed"
	if d > 0 {
		timed = "timed"
	}
	o.ended = append(o.ended, route+" "+outcome+" "+timed)
}

func (o *turnObserver) RunRefused(code string, n int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.refusals == nil {
		o.refusals = map[string]int64{}
	}
	o.refusals[code] += n
}

func (o *turnObserver) takeEnded() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.ended
	o.ended = nil
	return out
}

// closeUsageEndpoints is an endpoint service whose close reports usage, as anet-egress's does.
type closeUsageEndpoints struct {
	recEndpoints
	usage string
}

func (u *closeUsageEndpoints) Close(context.Context, string) (json.RawMessage, error) {
	return json.RawMessage(u.usage), nil
}

// The observer (the node's metrics) hears how each sandboxed turn ends, timed when it ran,
// the refusals its endpoint, model proxy and egress proxy reported at close, and each model
// request's time from its receipt (K1).
func TestObserverHearsSandboxTurns(t *testing.T) {
	obs := &turnObserver{}
	sb := &heldSandbox{started: make(chan struct{}, 4), release: make(chan struct{})}
	close(sb.release)
	ep := &closeUsageEndpoints{usage: `{"run_id":"r1","refusals":{"token_missing":2},"model":{"requests":3,"refusals":{"spend_limit":1},` +
		`"spend":{"model":"m","cost":10}},"tunnel":{"tunnels_opened":0,"refusals":{"host_not_allowed":3}},"connections":1,"connections_refused":0,` +
		`"receipts":{"model":[{"api":"anthropic","method":"POST","path":"/v1/messages","status":200,"tokens_in":1,"tokens_out":1,"cost_micros":10,` +
		`"started":"2026-01-02T03:04:05Z","ended":"2026-01-02T03:04:06Z","end":"closed"},{"api":"anthropic","method":"POST","path":"/v1/messages",` +
		`"status":200,"tokens_in":1,"tokens_out":1,"cost_micros":0,"started":"2026-01-02T03:04:06Z","ended":"2026-01-02T03:04:07Z","end":"closed"}]}}`}
	dir := t.TempDir()
	c := config.Default().AutoReply
	e, err := New(Options{Config: c, Sandbox: sb, Endpoints: ep, Completer: noCompleter{}, Ledger: testLedger(t), Observer: obs,
		Dirs:     Dirs{SandboxWork: filepath.Join(dir, "ws"), DirectWork: filepath.Join(dir, "w"), RunRoot: filepath.Join(dir, "runs")},
		LookPath: func(name string) (string, error) { return "/opt/agents/" + name, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ans := &answers{}
	e.HandleTask(context.Background(), peer.Task{Peer: newAID(t), Interaction: "ix-1", Text: "hi"}, ans)
	if len(ans.replies) != 1 {
		t.Fatalf("answers = %+v, want a reply", ans)
	}
	if got := obs.takeEnded(); !slices.Equal(got, []string{"sandbox answered timed"}) {
		t.Fatalf("observer heard %v", got)
	}
	want := map[string]int64{"token_missing": 2, "spend_limit": 1, "host_not_allowed": 3}
	if fmt.Sprint(obs.refusals) != fmt.Sprint(want) {
		t.Fatalf("run refusals heard %v, want %v", obs.refusals, want)
	}
	if obs.models != 2 {
		t.Fatalf("model requests timed = %d, want the receipts' 2", obs.models)
	}

	// Refused before it ran: the policy cannot be carried out (cursor in the sandbox).
	cur := c
	cur.Agent = config.AgentCursor
	if err := e.Reload(Settings{Config: cur}); err != nil {
		t.Fatal(err)
	}
	e.HandleTask(context.Background(), peer.Task{Peer: newAID(t), Interaction: "ix-2", Text: "hi"}, &answers{})
	// Held: a run budget of 0 leaves the task in the inbox and tells nobody.
	zero := c
	zero.Sandbox.RunsPerDay = 0
	if err := e.Reload(Settings{Config: zero}); err != nil {
		t.Fatal(err)
	}
	e.HandleTask(context.Background(), peer.Task{Peer: newAID(t), Interaction: "ix-3", Text: "hi"}, &answers{})
	if got := obs.takeEnded(); !slices.Equal(got, []string{"refuse refused untimed", "sandbox held untimed"}) {
		t.Fatalf("observer heard %v", got)
	}
}

// The openai turns the observer hears: answered or failed (timed: a model call was made),
// refused before the call left (a spend refusal), or refused for a spent budget before any
// call.
func TestObserverHearsOpenAITurns(t *testing.T) {
	obs := &turnObserver{}
	cfg := config.Default().AutoReply
	cfg.Backend, cfg.Untrusted = config.BackendOpenAI, config.ModeSandbox
	cfg.Sandbox.SpendPerDay, cfg.Sandbox.SpendPerPeerPerDay = 10_000, 3_000
	c := &completer{}
	e, err := New(Options{Config: cfg, Sandbox: noSandbox{}, Endpoints: noSandbox{}, Completer: c, Ledger: testLedger(t), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	a := newAID(t)
	task := func(id string) {
		e.HandleTask(context.Background(), peer.Task{Peer: a, Interaction: id, Text: "hi"}, &answers{})
	}
	spend := money.Spend{Model: "gpt-6-luna", Cost: 1100, Responses: 1}
	c.reply = egresswire.CompleteReply{Text: "hello", Model: "gpt-6-luna", Status: 200, Spend: &spend}
	task("ix-1")
	c.reply, c.err = egresswire.CompleteReply{}, &privsep.Error{Code: reasons.SpendLimit, Message: "worst case over the allowance"}
	task("ix-2")
	c.err = &privsep.Error{Code: reasons.Internal, Message: "egress died"}
	task("ix-3") // counts its whole allowance: the peer's cap is spent
	task("ix-4")
	want := []string{"openai answered timed", "openai refused untimed", "openai failed timed", "openai refused untimed"}
	if got := obs.takeEnded(); !slices.Equal(got, want) {
		t.Fatalf("observer heard %v, want %v", got, want)
	}
	if len(obs.refusals) != 0 {
		t.Fatalf("run refusals %v from turns without an endpoint", obs.refusals)
	}
}

// A usage report is anet-egress's bytes: whatever arrives, usageRefusals returns only counts
// above zero, each from one of the report's three refusal maps.
func FuzzUsageRefusals(f *testing.F) {
	for _, s := range []string{
		`{"refusals":{"token_missing":2},"model":{"refusals":{"spend_limit":1}},"tunnel":{"refusals":{"host_not_allowed":3}}}`,
		`{"refusals":{"a":-1,"b":0}}`, `{"tunnel":"x"}`, `null`, ``, `{"model":{"refusals":{"x":9223372036854775807}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := usageRefusals(raw)
		if len(got) > 0 && !json.Valid(raw) {
			t.Fatalf("refusals %v from a report that is not JSON", got)
		}
		for _, c := range got {
			if c.n <= 0 {
				t.Fatalf("count %d for %q", c.n, c.code)
			}
		}
	})
}
