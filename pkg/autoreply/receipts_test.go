package autoreply

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/receipt"
	"anet.dev/anet/pkg/store"
)

// runReceipts is what anet-egress reports of a run: a tunnel, a refused CONNECT (H4), a model
// request (K1).
func runReceipts() receipt.Set {
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	return receipt.Set{
		Tunnels: []receipt.Tunnel{
			{Host: "pypi.org", Port: 443, Dialled: "203.0.113.7:443", SNI: "pypi.org", Sent: 812, Received: 40960, Opened: at, Ended: at.Add(time.Second), End: receipt.Closed},
			{Host: "evil.example", Port: 443, Opened: at, Ended: at, End: receipt.Refused, Code: "egress_host_not_allowed", Rule: "H4"},
		},
		Model: []receipt.Model{{API: "anthropic", Method: "POST", Path: "/v1/messages", Status: 200, Model: "claude-haiku-5-5",
			TokensIn: 1200, TokensOut: 300, Cost: 2100, Started: at, Ended: at.Add(time.Second), End: receipt.Closed}},
	}
}

// closeUsage is an endpoint service whose close reports usage as told.
type closeUsage struct {
	recEndpoints
	usage json.RawMessage
}

func (u *closeUsage) Close(context.Context, string) (json.RawMessage, error) { return u.usage, nil }

// sandboxTurn runs one untrusted task through a sandboxed turn whose endpoint reports usage,
// on a real store, and returns the ledger and the task's turn_completed details.
func sandboxTurn(t *testing.T, usage string) (Ledger, string, map[string]json.RawMessage, *answers) {
	t.Helper()
	sb := &heldSandbox{started: make(chan struct{}, 1), release: make(chan struct{})}
	close(sb.release)
	ep := &closeUsage{usage: json.RawMessage(usage)}
	l := testLedger(t)
	dir := t.TempDir()
	e, err := New(Options{
		Config: config.Default().AutoReply, Sandbox: sb, Endpoints: ep, Completer: noCompleter{}, Ledger: l,
		Dirs:     Dirs{SandboxWork: filepath.Join(dir, "ws"), DirectWork: filepath.Join(dir, "w"), RunRoot: filepath.Join(dir, "runs")},
		LookPath: func(name string) (string, error) { return "/opt/agents/" + name, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	a := newAID(t)
	ans := &answers{}
	e.HandleTask(context.Background(), peer.Task{Peer: a, Interaction: "ix-1", Text: "hi"}, ans)
	entries, err := l.Store.List(context.Background(), store.ListOptions{Kind: KindTurnCompleted, Peer: a})
	if err != nil || len(entries) != 1 {
		t.Fatalf("turn_completed entries = %d, %v; want the run's one (answers %+v)", len(entries), err, ans)
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal(entries[0].Details, &d); err != nil {
		t.Fatal(err)
	}
	return l, a, d, ans
}

func usageWith(t *testing.T, receipts any) string {
	t.Helper()
	spend := money.Spend{Model: "claude-haiku-5-5", Tokens: money.Tokens{Input: 1200, Output: 300}, Cost: 2100, Responses: 1}
	b, err := json.Marshal(map[string]any{"model": map[string]any{"requests": 1, "spend": spend}, "receipts": receipts})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// H1–H7, R1, K1: a sandboxed run's receipts, reported in its endpoint's usage, are stored
// beside its turn_completed entry; the entry carries their digest and counts, and its usage
// no longer holds them; the run still counts with its spend, and the chain verifies.
func TestTurnKeepsItsReceipts(t *testing.T) {
	set := runReceipts()
	l, a, d, ans := sandboxTurn(t, usageWith(t, set))
	if len(ans.replies) != 1 {
		t.Fatalf("answers = %+v, want the agent's reply", ans)
	}
	run := unquote(t, d["run"])
	body, digest, err := l.Store.Receipts(context.Background(), run)
	if err != nil {
		t.Fatalf("receipts of run %s: %v", run, err)
	}
	want, _ := receipt.Encode(set)
	if !bytes.Equal(body, want) || digest != receipt.Digest(want) {
		t.Fatalf("stored receipts = %s (%s), want %s", body, digest, want)
	}
	var counts receipt.Counts
	if err := json.Unmarshal(d["receipts"], &counts); err != nil {
		t.Fatalf("details[receipts] = %s: %v", d["receipts"], err)
	}
	if wantCounts := receipt.CountsOf(set, want); counts != wantCounts {
		t.Fatalf("details[receipts] = %+v, want %+v", counts, wantCounts)
	}
	if counts.Tunnels != 2 || counts.Model != 1 || counts.Refused != 1 {
		t.Fatalf("counts = %+v, want 2 tunnels, 1 model request, 1 refused", counts)
	}
	var usage map[string]json.RawMessage
	if err := json.Unmarshal(d["usage"], &usage); err != nil || usage["model"] == nil {
		t.Fatalf("details[usage] = %s, %v; want the usage kept", d["usage"], err)
	}
	if _, ok := usage["receipts"]; ok {
		t.Fatalf("details[usage] still holds the receipts: %s", d["usage"])
	}
	if _, ok := d[detailReceiptsMissing]; ok {
		t.Fatalf("details = %v, want no receipts_missing", d)
	}
	if string(d["cost_micros"]) != "2100" {
		t.Fatalf("details[cost_micros] = %s, want the usage's 2100", d["cost_micros"])
	}
	of, err := l.Store.ReceiptsOf(context.Background(), a, "ix-1")
	if err != nil || len(of) != 1 || of[run].Body == nil {
		t.Fatalf("ReceiptsOf = %v, %v; want the run's", of, err)
	}
	if res, err := l.Store.Verify(context.Background(), l.Signer.Public()); err != nil {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
}

// B1, H1–H7: receipts that cannot be read never cost the run its completion: it is recorded,
// counted and answered, marked receipts_missing, with no receipts stored and none left in the
// usage; the same when the usage never names any.
func TestTurnWithBadReceiptsKeepsItsCompletion(t *testing.T) {
	for _, c := range []struct {
		name  string
		usage string
	}{
		{"not a set", usageWith(t, "all of them")},
		{"invalid receipt", usageWith(t, map[string]any{"tunnels": []any{map[string]any{"host": "h", "port": 443, "end": "exploded"}}})},
		{"null", usageWith(t, nil)},
		{"none reported", `{"model":{"requests":0}}`},
		{"no usage", ``},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, a, d, ans := sandboxTurn(t, c.usage)
			if len(ans.replies) != 1 {
				t.Fatalf("answers = %+v, want the agent's reply", ans)
			}
			if string(d["counted"]) != "true" || string(d[detailReceiptsMissing]) != "true" {
				t.Fatalf("details = %s, want a counted run with receipts_missing", mustJSON(d))
			}
			if _, ok := d["receipts"]; ok {
				t.Fatalf("details carry receipts: %s", d["receipts"])
			}
			if bytes.Contains(d["usage"], []byte("receipts")) {
				t.Fatalf("details[usage] = %s, want it without the receipts", d["usage"])
			}
			if _, _, err := l.Store.Receipts(context.Background(), unquote(t, d["run"])); !errors.Is(err, store.ErrNoReceipts) {
				t.Fatalf("receipts of the run: %v, want none stored", err)
			}
			if n, _ := l.Counted(context.Background(), a, time.Time{}, time.Now().Add(time.Hour)); n != 1 {
				t.Fatalf("counted runs = %d, want 1", n)
			}
		})
	}
}

// H1–H7, B7: the ledger writes a run's receipts in its completion's transaction: when the
// receipts cannot be stored, neither the completion nor its count is.
func TestCompletedWritesReceiptsInItsTransaction(t *testing.T) {
	ctx := context.Background()
	l := testLedger(t)
	a := newAID(t)
	set := runReceipts()
	enc, _ := receipt.Encode(set)
	rc := &RunReceipts{Set: set, Encoded: enc}
	if err := l.Completed(ctx, a, "ix-1", true, map[string]any{"run": "r-1"}, rc); err != nil {
		t.Fatal(err)
	}
	// The run's receipts exist: storing them again fails, and takes the entries with it.
	if err := l.Completed(ctx, a, "ix-2", true, map[string]any{"run": "r-1"}, rc); err == nil {
		t.Fatal("a second completion with the same run's receipts was recorded")
	}
	if err := l.Completed(ctx, a, "ix-3", true, map[string]any{}, rc); err == nil {
		t.Fatal("receipts without a run id were recorded")
	}
	for _, kind := range []string{KindTurnCompleted, KindRunCounted} {
		if n, _ := l.Store.Count(ctx, store.CountFilter{Kinds: []string{kind}}); n != 1 {
			t.Fatalf("%s entries = %d, want only the first completion's", kind, n)
		}
	}
	if _, err := l.Store.Verify(ctx, l.Signer.Public()); err != nil {
		t.Fatal(err)
	}
}

// The openai back-end's run has no endpoint and so no receipts: its completion names none
// and is not marked as missing them.
func TestOpenAITurnHasNoReceipts(t *testing.T) {
	ctx := context.Background()
	l := testLedger(t)
	cfg := config.Default().AutoReply
	cfg.Backend, cfg.Untrusted = config.BackendOpenAI, config.ModeSandbox
	spend := money.Spend{Model: "gpt-6-luna", Tokens: money.Tokens{Input: 10, Output: 20}, Cost: 11, Responses: 1}
	c := &completer{reply: egresswire.CompleteReply{Text: "hello", Model: "gpt-6-luna", Status: 200, Spend: &spend}}
	e, err := New(Options{Config: cfg, Sandbox: noSandbox{}, Endpoints: noSandbox{}, Completer: c, Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	a := newAID(t)
	e.HandleTask(ctx, peer.Task{Peer: a, Interaction: "ix-1", Text: "hi"}, &answers{})
	entries, _ := l.Store.List(ctx, store.ListOptions{Kind: KindTurnCompleted, Peer: a})
	if len(entries) != 1 {
		t.Fatalf("%d turn_completed entries, want 1", len(entries))
	}
	var d map[string]json.RawMessage
	json.Unmarshal(entries[0].Details, &d)
	if _, ok := d["receipts"]; ok {
		t.Fatalf("openai run details = %s, want no receipts", entries[0].Details)
	}
	if _, ok := d[detailReceiptsMissing]; ok {
		t.Fatalf("openai run details = %s, want no receipts_missing", entries[0].Details)
	}
}

// takeReceipts parses what anet-egress sent: whatever it holds, the usage the entry keeps
// never carries receipts, what it hands on decodes and encodes to the same bytes, and a usage
// without receipts is kept byte for byte.
func FuzzTakeReceipts(f *testing.F) {
	good, _ := json.Marshal(map[string]any{"model": map[string]any{"requests": 1}, "receipts": runReceipts()})
	for _, s := range []string{string(good), `{"receipts":"x"}`, `{"receipts":null}`, `{"model":{}}`, `[]`, `null`, ``, `{"receipts":{"tunnels":[{"end":"x"}]}}`, `{"receipts":{},"receipts":{"model":[]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, usage []byte) {
		rest, rc, err := takeReceipts(usage)
		var m map[string]json.RawMessage
		named := false
		if json.Unmarshal(usage, &m) == nil && m != nil {
			_, named = m["receipts"]
		}
		if !named {
			if rc != nil || err != nil || !bytes.Equal(rest, usage) {
				t.Fatalf("usage without receipts %q: got %q, %v, %v; want it unchanged", usage, rest, rc, err)
			}
			return
		}
		var r map[string]json.RawMessage
		if json.Unmarshal(rest, &r) != nil {
			t.Fatalf("rest %q of %q is not a JSON object", rest, usage)
		}
		if _, ok := r["receipts"]; ok {
			t.Fatalf("rest %q still holds receipts", rest)
		}
		if rc == nil {
			return
		}
		if err != nil {
			t.Fatalf("receipts handed on with an error: %v", err)
		}
		set, derr := receipt.Decode(rc.Encoded)
		again, eerr := receipt.Encode(set)
		if derr != nil || eerr != nil || !bytes.Equal(again, rc.Encoded) {
			t.Fatalf("receipts %q do not round-trip: %v, %v", rc.Encoded, derr, eerr)
		}
	})
}

func unquote(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return s
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
