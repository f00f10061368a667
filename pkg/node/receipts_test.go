//go:build !noautoreply

package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/pkg/autoreply"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/receipt"
	"anet.dev/anet/pkg/store"
)

// receiptsNode is a node with a real store, key and control socket serving what `anet show`
// and `anet evidence export` ask for.
func receiptsNode(t *testing.T) (*Node, *control.Client) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "anet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{store: st, id: id, log: slog.New(slog.DiscardHandler), paths: config.Paths{CacheDir: filepath.Join(dir, "cache")}}
	tok, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	s := control.NewServer(tok, n.log)
	s.Handle("GET", "/v1/interactions/{id}", n.showInteraction)
	s.HandleStream("GET", "/v1/evidence/export", n.exportEvidence)
	sock := filepath.Join(dir, "control.sock")
	l, err := control.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return n, control.NewClient(sock, tok)
}

// receiveTask stores a task from peer as the peer service does once it verified the message.
func receiveTask(t *testing.T, n *Node, peer, ix string) {
	t.Helper()
	raw := []byte("signed task " + ix)
	if _, err := n.store.Receive(context.Background(), n.id, store.Incoming{Type: "task", MsgID: "m-" + ix, Peer: peer, Interaction: ix,
		Text: "hi", Sent: time.Now().UTC(), ContentHash: sha256.Sum256(raw), Raw: raw, Digest: sha256.Sum256(raw)}); err != nil {
		t.Fatal(err)
	}
}

// hostileReceipts hold what an agent chose (the CONNECT host, the SNI, the request path)
// with escapes in it, as anet-egress clips and forwards them.
func hostileReceipts() receipt.Set {
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	return receipt.Set{
		Tunnels: []receipt.Tunnel{
			{Host: "pypi.org", Port: 443, Dialled: "203.0.113.7:443", SNI: "pypi.org", Sent: 812, Received: 40960, Opened: at, Ended: at.Add(time.Second), End: receipt.Closed},
			{Host: "evil\x1b]0;owned\x07.example\u202e", Port: 443, SNI: "x\x1b[2J", Opened: at, Ended: at, End: receipt.Refused, Code: "egress_host_not_allowed", Rule: "H4"},
		},
		Model: []receipt.Model{{API: "anthropic", Method: "POST", Path: "/v1/messages\x1b[1m", Status: 200, Model: "claude-haiku-5-5",
			TokensIn: 1200, TokensOut: 300, Cost: 2100, Started: at, Ended: at.Add(time.Second), End: receipt.Closed}},
	}
}

func complete(t *testing.T, n *Node, peer, ix string, details map[string]any, set *receipt.Set) {
	t.Helper()
	var rc *autoreply.RunReceipts
	if set != nil {
		enc, err := receipt.Encode(*set)
		if err != nil {
			t.Fatal(err)
		}
		rc = &autoreply.RunReceipts{Set: *set, Encoded: enc}
	}
	l := autoreply.Ledger{Store: n.store, Signer: n.id}
	if err := l.Completed(context.Background(), peer, ix, true, details, rc); err != nil {
		t.Fatal(err)
	}
}

// H1–H7, R1, K1: `anet show` (GET /v1/interactions/{id}) gives each run its receipts from the
// store with the counts its entry carries; a run without an endpoint has none, a run whose
// receipts never arrived says so, and receipts changed in the file after the fact are not
// shown as the run's but named as not matching the chain.
func TestShowReturnsReceipts(t *testing.T) {
	n, c := receiptsNode(t)
	peer, _ := identity.Generate()
	a := peer.AID()
	receiveTask(t, n, a, "ix-1")
	set := hostileReceipts()
	complete(t, n, a, "ix-1", map[string]any{"run": "r-1", "route": "sandbox"}, &set)
	complete(t, n, a, "ix-1", map[string]any{"run": "r-2", "route": "openai"}, nil)
	complete(t, n, a, "ix-1", map[string]any{"run": "r-3", "route": "sandbox", "receipts_missing": true}, nil)
	complete(t, n, a, "ix-1", map[string]any{"run": "r-4", "route": "sandbox"}, &set)
	if _, err := n.store.DB().Exec(`DROP TRIGGER receipts_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := n.store.DB().Exec(`UPDATE receipts SET body = replace(body, 'pypi.org', 'pypi.net') WHERE run = 'r-4'`); err != nil {
		t.Fatal(err)
	}

	var list []control.Interaction
	if err := c.Do(context.Background(), "GET", "/v1/interactions/ix-1", nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || len(list[0].Runs) != 4 {
		t.Fatalf("show = %+v, want the interaction with its 4 runs", list)
	}
	runs := list[0].Runs
	enc, _ := receipt.Encode(set)
	r1 := runs[0]
	if r1.Run != "r-1" || r1.Receipts == nil || r1.ReceiptsError != "" {
		t.Fatalf("run r-1 = %+v, want its receipts", r1)
	}
	if got, _ := receipt.Encode(*r1.Receipts); !bytes.Equal(got, enc) {
		t.Fatalf("run r-1 receipts = %s, want %s", got, enc)
	}
	if r1.Receipts.Tunnels[1].Host != set.Tunnels[1].Host {
		t.Fatalf("the API changed the agent's host: %q, want %q exactly (the CLI renders it)", r1.Receipts.Tunnels[1].Host, set.Tunnels[1].Host)
	}
	if want := receipt.CountsOf(set, enc); r1.ReceiptCounts == nil || *r1.ReceiptCounts != want {
		t.Fatalf("run r-1 counts = %+v, want %+v", r1.ReceiptCounts, want)
	}
	if r2 := runs[1]; r2.Receipts != nil || r2.ReceiptCounts != nil || r2.ReceiptsError != "" {
		t.Fatalf("openai run = %+v, want no receipts and no error", r2)
	}
	if r3 := runs[2]; r3.Receipts != nil || r3.ReceiptsError != receiptsNeverArrived {
		t.Fatalf("run without receipts = %+v, want %q", r3, receiptsNeverArrived)
	}
	if r4 := runs[3]; r4.Receipts != nil || r4.ReceiptCounts == nil || r4.ReceiptsError != receiptsChanged {
		t.Fatalf("run with changed receipts = %+v, want none shown and %q", r4, receiptsChanged)
	}
}

// H1–H7, R1, K1: GET /v1/evidence/export streams the whole chain: every entry once, in
// sequence order, with EvidenceEntry's fields, and each turn_completed entry's receipts
// inline, across more than one page of the store; the result names the head.
func TestExportStreamsTheChainWithReceipts(t *testing.T) {
	n, c := receiptsNode(t)
	peer, _ := identity.Generate()
	a := peer.AID()
	set := hostileReceipts()
	const runs = exportPage + 20
	for i := range runs {
		complete(t, n, a, "ix-1", map[string]any{"run": fmt.Sprintf("r-%d", i), "route": "sandbox"}, &set)
	}
	if _, err := n.store.Append(context.Background(), n.id, store.EntryInput{Kind: "operator_note", Details: map[string]string{"text": "done"}}); err != nil {
		t.Fatal(err)
	}
	var (
		lines []json.RawMessage
		res   control.ExportResult
	)
	err := c.DoStream(context.Background(), "GET", "/v1/evidence/export", nil, func(ev json.RawMessage) error {
		lines = append(lines, append(json.RawMessage(nil), ev...))
		return nil
	}, &res)
	if err != nil {
		t.Fatal(err)
	}
	// Two entries per counted run (turn_completed, run_counted) and the note.
	want := int64(2*runs + 1)
	if res.Entries != want || res.HeadSeq != want || int64(len(lines)) != want || res.Head == "" {
		t.Fatalf("export = %+v with %d lines, want %d entries up to head %d", res, len(lines), want, want)
	}
	enc, _ := receipt.Encode(set)
	withReceipts := 0
	for i, raw := range lines {
		if !json.Valid(raw) || bytes.ContainsRune(raw, '\n') {
			t.Fatalf("line %d is not one JSON value on one line: %s", i+1, raw)
		}
		var line control.ExportEntry
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&line); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, raw)
		}
		if line.Seq != int64(i+1) || line.Hash == "" || line.PrevHash == "" || len(line.Details) == 0 {
			t.Fatalf("line %d = seq %d %+v, want entry %d with its fields", i+1, line.Seq, line.EvidenceEntry, i+1)
		}
		if line.Kind == "turn_completed" {
			if line.Receipts == nil || line.ReceiptsError != "" {
				t.Fatalf("line %d (turn_completed) has no receipts: %s", i+1, raw)
			}
			if got, _ := receipt.Encode(*line.Receipts); !bytes.Equal(got, enc) {
				t.Fatalf("line %d receipts = %s, want %s", i+1, got, enc)
			}
			withReceipts++
		} else if line.Receipts != nil {
			t.Fatalf("line %d (%s) carries receipts", i+1, line.Kind)
		}
	}
	if withReceipts != runs {
		t.Fatalf("%d lines with receipts, want %d", withReceipts, runs)
	}
}
