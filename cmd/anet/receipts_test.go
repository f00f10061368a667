package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/receipt"
)

var receiptTime = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// agentReceipts carry what an agent chose (the CONNECT host, its SNI, the request path, the
// model named back) with escape sequences and a bidi override in it.
func agentReceipts() *receipt.Set {
	at := receiptTime
	return &receipt.Set{
		Tunnels: []receipt.Tunnel{
			{Host: "pypi.org", Port: 443, Dialled: "203.0.113.7:443", SNI: "pypi.org", Sent: 812, Received: 40960, Opened: at, Ended: at.Add(1500 * time.Millisecond), End: receipt.Closed},
			{Host: "evil\x1b]0;owned\x07.example\u202e", Port: 443, SNI: "x\x1b[2J", Opened: at, Ended: at, End: receipt.Refused, Code: "egress_host_not_allowed", Rule: "H4"},
		},
		Model: []receipt.Model{
			{API: "anthropic", Method: "POST", Path: "/v1/messages", Status: 200, Model: "claude-haiku-5-5", TokensIn: 1200, TokensOut: 300, Cost: 2100, Started: at, Ended: at.Add(2 * time.Second), End: receipt.Closed},
			{API: "anthropic", Method: "POST", Path: "/v1/\u202emessages\x7f", Status: 429, Model: "m\u009b31m", Started: at, Ended: at.Add(3 * time.Millisecond), End: receipt.Capped, Code: "model_request_limit", Rule: "R1"},
		},
		DroppedTunnels: 2,
	}
}

// U1, H1–H7, R1, K1: anet show lists a run's receipts under it, one line per tunnel and model
// request with every field, and shows what the agent chose (host, SNI, path, model) visibly;
// a run whose receipts are not shown says why.
func TestShowRendersReceiptsSafely(t *testing.T) {
	set := agentReceipts()
	it := control.Interaction{Interaction: "ix-1", Peer: "anpeer", Direction: "in", State: "answered", Text: "hi", SentAt: receiptTime,
		Runs: []control.Run{
			{Run: "r-1", Route: "sandbox", At: receiptTime, Counted: true, Metered: true, Model: "claude-haiku-5-5", Receipts: set,
				ReceiptCounts: &receipt.Counts{Digest: "sha256:0123456789abcdef0123", Tunnels: 2, Model: 2, Refused: 1, Dropped: 2}},
			{Run: "r-2", Route: "sandbox", At: receiptTime, Metered: true, ReceiptsError: "the run's endpoint reported no readable receipts"},
		}}
	var b bytes.Buffer
	printInteraction(&b, it)
	out := b.String()
	assertNoRaw(t, "anet show with receipts", out)
	for _, want := range []string{
		"  receipts sha256:0123456789ab…: 2 tunnel(s), 2 model request(s), 1 refused, 2 more not kept\n",
		"  tunnel pypi.org:443 → 203.0.113.7:443, sni pypi.org, 812 B ↑ 40960 B ↓, 1.5s, closed\n",
		"  tunnel evil\\x1b]0;owned\\x07.example\\u202e:443 → -, sni x\\x1b[2J, 0 B ↑ 0 B ↓, 0s, refused: egress_host_not_allowed (H4)\n",
		"  model POST /v1/messages → 200, model claude-haiku-5-5, tokens 1200 in / 300 out, cost " + set.Model[0].Cost.String() + ", 2s, closed\n",
		"  model POST /v1/\\u202emessages\\x7f → 429, model m\\u009b31m, tokens 0 in / 0 out, cost " + set.Model[1].Cost.String() + ", 3ms, cap: model_request_limit (R1)\n",
		"  (2 more tunnel(s) and 0 more model request(s) were counted but not kept)\n",
		"  receipts not shown: the run's endpoint reported no readable receipts\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("anet show output lacks %q:\n%s", want, out)
		}
	}
	// The receipts sit under their run: r-1's line, then its receipts, then r-2's line.
	if i, j := strings.Index(out, "run r-1 "), strings.Index(out, "  tunnel pypi.org"); i < 0 || j < i || strings.Index(out, "run r-2 ") < j {
		t.Errorf("receipts are not listed under their run:\n%s", out)
	}
}

// U1, H1–H7: anet evidence export writes each streamed entry as one line of JSON, in the
// order anetd sent them (sequence order), with the receipts inline and the agent's text
// exact once decoded but escaped on the wire; --out puts the file in place only when the
// export is whole.
func TestExportWritesJSONLines(t *testing.T) {
	set := agentReceipts()
	entries := []control.ExportEntry{
		{EvidenceEntry: control.EvidenceEntry{Seq: 1, Time: receiptTime, Kind: "task_received", Interaction: "ix\x1b[2J", Details: json.RawMessage(`{"text":"a\u202eb"}`), PrevHash: "00", Hash: "01"}},
		{EvidenceEntry: control.EvidenceEntry{Seq: 2, Time: receiptTime, Kind: "turn_completed", Details: json.RawMessage(`{"run":"r-1","receipts":{"digest":"sha256:00","tunnels":2,"model":2,"refused":1}}`), PrevHash: "01", Hash: "02"}, Receipts: set},
		{EvidenceEntry: control.EvidenceEntry{Seq: 3, Time: receiptTime, Kind: "turn_completed", Details: json.RawMessage(`{"run":"r-2","receipts":{"digest":"sha256:00"}}`), PrevHash: "02", Hash: "03"}, ReceiptsError: "missing"},
	}
	cl := exportServer(t, entries)
	var b bytes.Buffer
	res, err := exportJSONL(context.Background(), cl, &b)
	if err != nil || res.Entries != 3 {
		t.Fatalf("exportJSONL = %+v, %v", res, err)
	}
	out := b.String()
	assertNoRaw(t, "anet evidence export", out)
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	var n int
	for sc.Scan() {
		var got control.ExportEntry
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %d is not an export entry: %v: %s", n+1, err, sc.Text())
		}
		want := entries[n]
		if got.Seq != want.Seq || got.Interaction != want.Interaction || got.ReceiptsError != want.ReceiptsError {
			t.Fatalf("line %d = %+v, want %+v", n+1, got, want)
		}
		if (want.Receipts == nil) != (got.Receipts == nil) {
			t.Fatalf("line %d receipts = %v, want %v", n+1, got.Receipts, want.Receipts)
		}
		if want.Receipts != nil {
			a, _ := receipt.Encode(*got.Receipts)
			w, _ := receipt.Encode(*want.Receipts)
			if !bytes.Equal(a, w) {
				t.Fatalf("line %d receipts = %s, want %s", n+1, a, w)
			}
		}
		n++
	}
	if n != len(entries) {
		t.Fatalf("%d lines, want %d:\n%s", n, len(entries), out)
	}
	if !strings.Contains(out, `evil\u001b]0;owned\u0007.example\u202e`) {
		t.Fatalf("the agent's host is not escaped in the export:\n%s", out)
	}

	path := filepath.Join(t.TempDir(), "chain.jsonl")
	if _, err := exportToFile(context.Background(), cl, path); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != out {
		t.Fatalf("--out file = %q, %v; want what standard output gets", got, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("--out file mode %o, want 0600", fi.Mode().Perm())
	}
	failing := filepath.Join(t.TempDir(), "broken.jsonl")
	if _, err := exportToFile(context.Background(), exportServer(t, entries, errors.New("store failed")), failing); err == nil {
		t.Fatal("an export that failed half way reported success")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(failing), "*")); len(left) != 0 {
		t.Fatalf("a failed export left %v behind", left)
	}
}

// exportServer serves GET /v1/evidence/export from entries, ending with fail if given.
func exportServer(t *testing.T, entries []control.ExportEntry, fail ...error) *control.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "control.sock")
	tok, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	s := control.NewServer(tok, slog.New(slog.DiscardHandler))
	s.HandleStream("GET", "/v1/evidence/export", func(_ *http.Request, emit func(any) error) (any, error) {
		for _, e := range entries {
			if err := emit(e); err != nil {
				return nil, err
			}
		}
		if len(fail) > 0 {
			return nil, fail[0]
		}
		return control.ExportResult{Entries: int64(len(entries)), HeadSeq: int64(len(entries)), Head: "03"}, nil
	})
	l, err := control.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return control.NewClient(sock, tok)
}
