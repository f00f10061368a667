package store

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/receipt"
)

// sampleReceipts is a run's receipts as anet-egress reports them: a tunnel that closed, one
// refused by the allow list (H4), a model request answered and one refused at the cap (R1).
func sampleReceipts() receipt.Set {
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	return receipt.Set{
		Tunnels: []receipt.Tunnel{
			{Host: "pypi.org", Port: 443, Dialled: "203.0.113.7:443", SNI: "pypi.org", Sent: 812, Received: 40960, Opened: at, Ended: at.Add(2 * time.Second), End: receipt.Closed},
			{Host: "evil.example", Port: 443, Opened: at, Ended: at, End: receipt.Refused, Code: "egress_host_not_allowed", Rule: "H4"},
		},
		Model: []receipt.Model{
			{API: "anthropic", Method: "POST", Path: "/v1/messages", Status: 200, Model: "claude-haiku-5-5", TokensIn: 1200, TokensOut: 300, Cost: 2100, Started: at, Ended: at.Add(time.Second), End: receipt.Closed},
			{API: "anthropic", Method: "POST", Path: "/v1/messages", Status: 429, Started: at, Ended: at, End: receipt.Capped, Code: "model_request_limit", Rule: "R1"},
		},
		DroppedTunnels: 3,
	}
}

func encodeReceipts(t *testing.T, s receipt.Set) []byte {
	t.Helper()
	b, err := receipt.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// putRun records a run's completion as the auto-reply ledger does: its turn_completed entry,
// whose details name the receipts' digest, and the receipts row, in one transaction of the
// caller's.
func putRun(ctx context.Context, s *Store, signer Signer, run, peer, ix string, body []byte) (Entry, error) {
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		return Entry{}, err
	}
	defer tx.Rollback()
	e, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "turn_completed", Peer: peer, Interaction: ix,
		Details: map[string]any{"run": run, "receipts": receipt.Counts{Digest: receipt.Digest(body)}}})
	if err != nil {
		return Entry{}, err
	}
	if _, err := s.PutReceiptsTx(ctx, tx, ReceiptsInput{Run: run, Peer: peer, Interaction: ix, Seq: e.Seq, Body: body}); err != nil {
		return Entry{}, err
	}
	return e, s.Commit(tx)
}

// H1–H7, R1, K1: a run's receipts are stored byte for byte beside its entry, found by run and
// by interaction, decode to the set that was stored, and the chain with them verifies; the
// rows are append-only inside the node.
func TestReceiptsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	signer := newSeedSigner(1)
	set := sampleReceipts()
	body := encodeReceipts(t, set)
	other := encodeReceipts(t, receipt.Set{})
	if _, err := putRun(ctx, s, signer, "r-1", goldenPeer, "ix-1", body); err != nil {
		t.Fatal(err)
	}
	if _, err := putRun(ctx, s, signer, "r-2", goldenPeer, "ix-1", other); err != nil {
		t.Fatal(err)
	}
	if _, err := putRun(ctx, s, signer, "r-3", goldenPeer, "ix-2", body); err != nil {
		t.Fatal(err)
	}
	got, digest, err := s.Receipts(ctx, "r-1")
	if err != nil || !bytes.Equal(got, body) || digest != receipt.Digest(body) {
		t.Fatalf("Receipts(r-1) = %q, %q, %v; want the stored bytes and their digest", got, digest, err)
	}
	dec, err := receipt.Decode(got)
	if err != nil || !reflect.DeepEqual(dec, set) {
		t.Fatalf("stored receipts decode to %+v, %v; want %+v", dec, err, set)
	}
	if _, _, err := s.Receipts(ctx, "r-none"); !errors.Is(err, ErrNoReceipts) {
		t.Fatalf("Receipts(unknown run) = %v, want ErrNoReceipts", err)
	}
	of, err := s.ReceiptsOf(ctx, goldenPeer, "ix-1")
	if err != nil || len(of) != 2 || !bytes.Equal(of["r-2"].Body, other) || of["r-1"].Seq != 1 || of["r-2"].Seq != 2 || of["r-1"].Interaction != "ix-1" {
		t.Fatalf("ReceiptsOf(ix-1) = %+v, %v; want r-1 at entry 1 and r-2 at entry 2", of, err)
	}
	if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != 3 {
		t.Fatalf("Verify = %+v, %v; want 3 entries with their receipts", res, err)
	}
	if _, err := s.DB().Exec(`UPDATE receipts SET body = x'7b7d' WHERE run = 'r-1'`); err == nil {
		t.Fatal("a receipts row could be changed: its append-only trigger is missing")
	}
	if _, err := s.DB().Exec(`DELETE FROM receipts WHERE run = 'r-1'`); err == nil {
		t.Fatal("a receipts row could be deleted: its append-only trigger is missing")
	}
}

// H1–H7, B7: receipts and their entry are one write. A transaction that fails after both, at
// its commit or before it (a crash), leaves neither; a receipts write that fails leaves no
// entry that names it; and the chain still verifies.
func TestReceiptsShareTheEntrysTransaction(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	signer := newSeedSigner(1)
	body := encodeReceipts(t, sampleReceipts())
	if _, err := putRun(ctx, s, signer, "r-1", goldenPeer, "ix-1", body); err != nil {
		t.Fatal(err)
	}
	neither := func(t *testing.T, run string) {
		t.Helper()
		if n := countRows(t, s, "evidence"); n != 1 {
			t.Errorf("%d entries after the failed write, want the 1 before it", n)
		}
		if _, _, err := s.Receipts(ctx, run); !errors.Is(err, ErrNoReceipts) {
			t.Errorf("receipts of %s after the failed write: %v, want none", run, err)
		}
		if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != 1 {
			t.Errorf("Verify after the failed write = %+v, %v", res, err)
		}
	}

	t.Run("commit fails", func(t *testing.T) {
		// A deferred constraint is checked at COMMIT: the commit itself fails, after the
		// entry and the receipts were written.
		for _, q := range []string{`CREATE TABLE test_parent (id INTEGER PRIMARY KEY)`,
			`CREATE TABLE test_child (p INTEGER REFERENCES test_parent(id) DEFERRABLE INITIALLY DEFERRED)`} {
			if _, err := s.DB().Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		e, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "turn_completed", Peer: goldenPeer, Interaction: "ix-1",
			Details: map[string]any{"run": "r-2", "receipts": receipt.Counts{Digest: receipt.Digest(body)}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutReceiptsTx(ctx, tx, ReceiptsInput{Run: "r-2", Peer: goldenPeer, Interaction: "ix-1", Seq: e.Seq, Body: body}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO test_child (p) VALUES (42)`); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
			t.Fatalf("Commit = %v, want the deferred constraint to fail it", err)
		}
		neither(t, "r-2")
	})
	t.Run("crash before commit", func(t *testing.T) {
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		e, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "turn_completed", Details: map[string]any{"run": "r-3", "receipts": receipt.Counts{Digest: receipt.Digest(body)}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutReceiptsTx(ctx, tx, ReceiptsInput{Run: "r-3", Seq: e.Seq, Body: body}); err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		neither(t, "r-3")
	})
	t.Run("receipts write fails", func(t *testing.T) {
		// r-1's receipts exist: a second row for the run is refused, and the caller's
		// transaction, entry and all, is not committed.
		if _, err := putRun(ctx, s, signer, "r-1", goldenPeer, "ix-1", body); err == nil {
			t.Fatal("a second receipts row for run r-1 was stored")
		}
		if n := countRows(t, s, "evidence"); n != 1 {
			t.Errorf("%d entries after the failed write, want 1", n)
		}
	})
	t.Run("refused inputs", func(t *testing.T) {
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, in := range []ReceiptsInput{
			{Run: "", Seq: 1, Body: body},
			{Run: "r-x", Seq: 0, Body: body},
			{Run: "r-x", Seq: 1},
			{Run: "r-x", Seq: 1, Body: []byte(`[1]`)},
			{Run: "r-x", Seq: 1, Body: []byte(`{"tunnels":`)},
			{Run: "r-x", Seq: 1, Peer: "not-an-aid", Body: body},
			{Run: "r-x", Seq: 1, Interaction: "ix\x1b", Body: body},
			{Run: "r-x", Seq: 1, Body: append([]byte(`{"pad":"`), append(bytes.Repeat([]byte("x"), maxReceiptsLen), '"', '}')...)},
		} {
			if _, err := s.PutReceiptsTx(ctx, tx, in); err == nil {
				t.Errorf("PutReceiptsTx(run %q, seq %d, %d-byte body) stored it", in.Run, in.Seq, len(in.Body))
			}
		}
	})
}

// H1–H7, R1, K1: receipts changed after the fact fail verification at their entry: a changed
// body, a missing row, a row moved to another entry, a changed digest beside the body, and a
// digest changed in the entry (which its hash covers).
func TestVerifyCatchesChangedReceipts(t *testing.T) {
	const k = 3 // the run whose receipts are changed, at entry 3
	for _, c := range []struct {
		name   string
		tamper func(t *testing.T, s *Store, body []byte)
		reason string
	}{
		{"changed body", func(t *testing.T, s *Store, body []byte) {
			i := bytes.Index(body, []byte("pypi"))
			tamper(t, s, `UPDATE receipts SET body = ? WHERE run = 'r-3'`, flipByte(body, i))
		}, "receipts of run r-3 do not match their digest"},
		{"body of another run", func(t *testing.T, s *Store, _ []byte) {
			tamper(t, s, `UPDATE receipts SET body = (SELECT body FROM receipts WHERE run = 'r-1') WHERE run = 'r-3'`)
		}, "receipts of run r-3 do not match their digest"},
		{"missing row", func(t *testing.T, s *Store, _ []byte) {
			tamper(t, s, `DELETE FROM receipts WHERE run = 'r-3'`)
		}, "receipts of run r-3 are missing"},
		{"row moved to another entry", func(t *testing.T, s *Store, _ []byte) {
			tamper(t, s, `UPDATE receipts SET seq = 99 WHERE run = 'r-3'`)
		}, "receipts of run r-3 are missing"},
		{"digest column changed with the body", func(t *testing.T, s *Store, body []byte) {
			forged := bytes.Replace(body, []byte("evil.example"), []byte("fine.example"), 1)
			tamper(t, s, `UPDATE receipts SET body = ?, digest = ? WHERE run = 'r-3'`, forged, receipt.Digest(forged))
		}, "receipts of run r-3 do not match their digest"},
		{"digest column changed", func(t *testing.T, s *Store, _ []byte) {
			tamper(t, s, `UPDATE receipts SET digest = 'sha256:00' WHERE run = 'r-3'`)
		}, "receipts of run r-3 do not match their digest"},
		{"digest changed in the entry", func(t *testing.T, s *Store, _ []byte) {
			var d string
			s.DB().QueryRow(`SELECT details FROM evidence WHERE seq = ?`, k).Scan(&d)
			i := strings.Index(d, "sha256:") + len("sha256:")
			tamper(t, s, `UPDATE evidence SET details = ? WHERE seq = ?`, flipAt(d, i), k)
		}, "hash mismatch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTemp(t)
			signer := newSeedSigner(1)
			body := encodeReceipts(t, sampleReceipts())
			for i, run := range []string{"r-1", "r-2", "r-3", "r-4"} {
				b := body
				if i == 0 {
					b = encodeReceipts(t, receipt.Set{})
				}
				if _, err := putRun(ctx, s, signer, run, goldenPeer, "ix-1", b); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Verify(ctx, signer.Public()); err != nil {
				t.Fatalf("Verify before tampering: %v", err)
			}
			c.tamper(t, s, body)
			res, err := s.Verify(ctx, signer.Public())
			var ce *ChainError
			if !errors.As(err, &ce) || ce.Seq != k || !strings.Contains(ce.Reason, c.reason) {
				t.Fatalf("Verify = %v, want entry %d: %s", err, k, c.reason)
			}
			if res.Entries != k-1 {
				t.Fatalf("Verify vouched for %d entries, want the %d before the bad one", res.Entries, k-1)
			}
		})
	}
}

// A turn_completed entry without a receipts digest (a run without an endpoint, or one written
// before receipts) needs no row, and a row no entry names is no reason to fail.
func TestVerifyWithoutReceipts(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	signer := newSeedSigner(1)
	if _, err := s.Append(ctx, signer, EntryInput{Kind: "turn_completed", Details: map[string]any{"run": "r-openai", "route": "openai"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, signer, EntryInput{Kind: "turn_completed", Details: map[string]any{"run": "r-x", "receipts": map[string]any{"tunnels": 0}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != 2 {
		t.Fatalf("Verify = %+v, %v; want both entries", res, err)
	}
}

// Upgrading from schema version 4 keeps the chain and every other row, adds the receipts
// table, and runs recorded after it verify with the old entries.
func TestReceiptsMigrationKeepsOldData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "anet.db")
	old, err := open(ctx, path, migrations[:4])
	if err != nil {
		t.Fatal(err)
	}
	signer := newSeedSigner(1)
	before := appendN(t, old, signer, 5)
	if err := old.SetMeta(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := old.DB().Exec(`SELECT 1 FROM receipts`); err == nil {
		t.Fatal("schema version 4 already has a receipts table")
	}
	old.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatalf("open (migrating): %v", err)
	}
	defer s.Close()
	var v int
	s.DB().QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v)
	if v != 5 || SchemaVersion() != 5 {
		t.Fatalf("schema version after the upgrade = %d (build %d), want 5", v, SchemaVersion())
	}
	list, err := s.List(ctx, ListOptions{})
	if err != nil || len(list) != 5 || list[4].Hash != before[4].Hash {
		t.Fatalf("entries after the upgrade = %d, %v; want the 5 written before", len(list), err)
	}
	if val, ok, _ := s.Meta(ctx, "k"); !ok || val != "v" {
		t.Fatalf("meta after the upgrade = %q, %v", val, ok)
	}
	if _, err := putRun(ctx, s, signer, "r-1", goldenPeer, "ix-1", encodeReceipts(t, sampleReceipts())); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != 6 {
		t.Fatalf("Verify after the upgrade = %+v, %v; want 6 entries", res, err)
	}
}

// The export pages through the chain by sequence number: After and Through bound a page.
func TestListPagesBySeq(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	appendN(t, s, newSeedSigner(1), 10)
	var got []int64
	for after := int64(0); ; {
		page, err := s.List(ctx, ListOptions{After: after, Through: 8, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			got = append(got, e.Seq)
		}
		after = page[len(page)-1].Seq
	}
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pages gave entries %v, want %v", got, want)
	}
}

// claimOf reads details from the store file, which someone with the file may have written:
// it never panics, claims only for turn_completed with a digest, and reads back what the
// node writes.
func FuzzClaimOf(f *testing.F) {
	f.Add("turn_completed", `{"run":"r-1","receipts":{"digest":"sha256:00","tunnels":1}}`)
	f.Add("turn_completed", `{"run":"r-1","receipts":{"tunnels":1}}`)
	f.Add("turn_completed", `{"receipts":null}`)
	f.Add("turn_completed", `{"receipts":"sha256:00"}`)
	f.Add("operator_note", `{"run":"r-1","receipts":{"digest":"sha256:00"}}`)
	f.Add("turn_completed", `[`)
	f.Fuzz(func(t *testing.T, kind, details string) {
		c, ok := claimOf(kind, details)
		if ok && (kind != "turn_completed" || c.digest == "") {
			t.Fatalf("claimOf(%q, %q) = %+v, a claim without a turn_completed digest", kind, details, c)
		}
		if !ok && c != (receiptsClaim{}) {
			t.Fatalf("claimOf(%q, %q) = %+v without a claim", kind, details, c)
		}
	})
}
