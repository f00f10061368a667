package autoreply

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/store"
)

// completer stands in for anet-egress's completion (its own tests run the real one): it
// records the allowance it was given and answers as told.
type completer struct {
	mu        sync.Mutex
	allowance []*money.Micros
	reply     egresswire.CompleteReply
	err       error
}

func (c *completer) Complete(_ context.Context, req egresswire.CompleteRequest) (egresswire.CompleteReply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allowance = append(c.allowance, req.Allowance)
	return c.reply, c.err
}

type noSandbox struct{}

func (noSandbox) Probe(context.Context) (sandbox.ProbeResult, error) {
	return sandbox.ProbeResult{}, errors.New("unused")
}
func (noSandbox) Start(context.Context, sandbox.Spec, sandbox.Stdio) (sandbox.Run, error) {
	return nil, errors.New("unused")
}
func (noSandbox) StopAll() {}
func (noSandbox) Open(context.Context, egresswire.Policy) (egresswire.OpenReply, error) {
	return egresswire.OpenReply{}, errors.New("unused")
}
func (noSandbox) Close(context.Context, string) (json.RawMessage, error) { return nil, nil }

type answers struct {
	mu      sync.Mutex
	replies []string
	refused []reasons.Code
	until   []time.Time
}

func (a *answers) Reply(_ context.Context, _, _, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.replies = append(a.replies, text)
	return nil
}

func (a *answers) Refuse(_ context.Context, _, _ string, code reasons.Code, until time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused, a.until = append(a.refused, code), append(a.until, until)
	return nil
}

// K1, K2 for the openai back-end: the call gets the peer's allowance; its spend lands in
// run_counted; a call refused for spend is answered budget with the day's end and not
// counted; a call whose spend never arrived counts its whole allowance.
func TestOpenAITurnSpendK1K2(t *testing.T) {
	ctx := context.Background()
	l := testLedger(t)
	cfg := config.Default().AutoReply
	cfg.Backend, cfg.Untrusted = config.BackendOpenAI, config.ModeSandbox
	cfg.Sandbox.SpendPerDay, cfg.Sandbox.SpendPerPeerPerDay = 10_000, 3_000
	c := &completer{}
	e, err := New(Options{Config: cfg, Sandbox: noSandbox{}, Endpoints: noSandbox{}, Completer: c, Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	a := newAID(t)
	task := func(id string) *answers {
		ans := &answers{}
		e.HandleTask(ctx, peer.Task{Peer: a, Interaction: id, Text: "hi"}, ans)
		return ans
	}
	start, end := DayBounds(time.Now())

	spend := money.Spend{Model: "gpt-6-luna", Tokens: money.Tokens{Input: 1000, Output: 2000}, Cost: 1100, Responses: 1}
	c.reply = egresswire.CompleteReply{Text: "hello", Model: "gpt-6-luna", Status: 200, Spend: &spend}
	if ans := task("ix-1"); len(ans.replies) != 1 {
		t.Fatalf("answers = %+v, want a reply", ans)
	}
	if got := c.allowance[0]; got == nil || *got != 3_000 {
		t.Fatalf("allowance given to the call = %v, want the peer's 3000", got)
	}
	if got, _ := l.Spent(ctx, a, start, end); got != 1100 {
		t.Fatalf("spent after one call = %d, want 1100", got)
	}

	c.reply, c.err = egresswire.CompleteReply{}, &privsep.Error{Code: reasons.SpendLimit, Message: "worst case over the allowance"}
	ans := task("ix-2")
	if len(ans.refused) != 1 || ans.refused[0] != reasons.Budget || !ans.until[0].Equal(end) {
		t.Fatalf("answers = %+v, want budget until %v", ans, end)
	}
	if n, _ := l.Counted(ctx, a, start, end); n != 1 {
		t.Fatalf("counted runs = %d, want 1: a call refused before it left is not a run", n)
	}
	if got := *c.allowance[1]; got != 3_000-1100 {
		t.Fatalf("second allowance = %d, want %d", got, 3_000-1100)
	}

	// The helper went down mid-call after the request left: no spend came back.
	c.reply, c.err = egresswire.CompleteReply{}, &privsep.Error{Code: reasons.Internal, Message: "egress died"}
	if ans := task("ix-3"); len(ans.refused) != 1 || ans.refused[0] != TurnFailed {
		t.Fatalf("answers = %+v, want turn_failed", ans)
	}
	if got, _ := l.Spent(ctx, a, start, end); got != 3_000 {
		t.Fatalf("spent = %d, want 3000: the unknown call counts its whole allowance (1900)", got)
	}
	if ans := task("ix-4"); len(ans.refused) != 1 || ans.refused[0] != reasons.Budget {
		t.Fatalf("answers after the peer's cap = %+v, want budget", ans)
	}
	entries, _ := l.Store.List(ctx, store.ListOptions{Kind: KindRunCounted, Peer: a})
	var d map[string]any
	json.Unmarshal(entries[len(entries)-1].Details, &d)
	if d["spend_unknown"] != true || d["cost_micros"] != float64(1900) {
		t.Fatalf("last run_counted = %v, want spend_unknown with cost 1900", d)
	}
}
