package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestVerifyNamesTamperedEntry edits one entry of a 20-entry chain directly in SQLite, as
// someone with the file could (B5: a forged chain must not be trusted to rebuild the budget).
// Verify must stop at that entry and say why.
func TestVerifyNamesTamperedEntry(t *testing.T) {
	const n, k = 20, 7
	tests := []struct {
		name     string
		tamper   func(t *testing.T, s *Store, e []Entry)
		seq      int64
		reasons  []string
		verified int64 // entries before the bad one
	}{
		{
			name: "one byte of details",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				// {"i":7,...}: the digit 7 becomes 6; still valid JSON.
				tamper(t, s, `UPDATE evidence SET details = ? WHERE seq = ?`, flipAt(string(e[k-1].Details), strings.IndexByte(string(e[k-1].Details), '7')), k)
			},
			verified: k - 1, seq: k, reasons: []string{"hash mismatch (stored ", ", computed "},
		},
		{
			name: "one byte of kind",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				tamper(t, s, `UPDATE evidence SET kind = ? WHERE seq = ?`, flipAt(e[k-1].Kind, 0), k)
			},
			verified: k - 1, seq: k, reasons: []string{"hash mismatch"},
		},
		{
			name: "one byte of time",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				// The units digit of the seconds: still a valid, canonical time.
				tamper(t, s, `UPDATE evidence SET time = ? WHERE seq = ?`, flipAt(formatTime(e[k-1].Time), 18), k)
			},
			verified: k - 1, seq: k, reasons: []string{"hash mismatch"},
		},
		{
			name: "one byte of peer",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				// Entry 8 has a peer (appendN sets it on even entries).
				tamper(t, s, `UPDATE evidence SET peer = ? WHERE seq = ?`, flipAt(e[k].Peer, 10), k+1)
			},
			verified: k, seq: k + 1, reasons: []string{"hash mismatch"},
		},
		{
			name: "one byte of hash",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				tamper(t, s, `UPDATE evidence SET hash = ? WHERE seq = ?`, flipByte(e[k-1].Hash[:], 5), k)
			},
			verified: k - 1, seq: k, reasons: []string{"hash mismatch"},
		},
		{
			name: "one byte of prev_hash",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				tamper(t, s, `UPDATE evidence SET prev_hash = ? WHERE seq = ?`, flipByte(e[k-1].PrevHash[:], 0), k)
			},
			verified: k - 1, seq: k, reasons: []string{"prev_hash does not match entry 6"},
		},
		{
			// Each append of appendN is its own commit, so entry k has its own checkpoint.
			name: "one byte of the checkpoint's signature",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				tamper(t, s, `UPDATE evidence_checkpoints SET sig = ? WHERE seq = ?`, flipByte(checkpointSig(t, s, k), 40), k)
			},
			verified: k - 1, seq: k, reasons: []string{"the checkpoint at entry 7: signature invalid"},
		},
		{
			// The forger recomputes the hash after editing details; without the node key the
			// checkpoint gives it away.
			name: "details edited and hash recomputed",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				forged := e[k-1]
				forged.Details = []byte(`{"i":7,"note":"forged"}`)
				h := ComputeHash(forged)
				tamper(t, s, `UPDATE evidence SET details = ?, hash = ? WHERE seq = ?`, string(forged.Details), h[:], k)
			},
			verified: k - 1, seq: k, reasons: []string{"the checkpoint at entry 7 does not sign this chain"},
		},
		{
			// ... and forges the checkpoint's hash too: the signature gives it away.
			name: "details edited, hash and checkpoint recomputed",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				forged := e[k-1]
				forged.Details = []byte(`{"i":7,"note":"forged"}`)
				h := ComputeHash(forged)
				tamper(t, s, `UPDATE evidence SET details = ?, hash = ? WHERE seq = ?`, string(forged.Details), h[:], k)
				tamper(t, s, `UPDATE evidence_checkpoints SET hash = ? WHERE seq = ?`, h[:], k)
			},
			verified: k - 1, seq: k, reasons: []string{"the checkpoint at entry 7: signature invalid"},
		},
		{
			// A file edited outside SQLite's CHECKs: a checkpoint's hash cut short names the
			// entries it claims, it does not crash the verifier.
			name: "checkpoint hash truncated",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				tamper(t, s, `SELECT 1`)
				ctx := context.Background()
				c, err := s.DB().Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				for _, q := range []string{`PRAGMA ignore_check_constraints = ON`, `UPDATE evidence_checkpoints SET hash = x'0102' WHERE seq = 7`, `PRAGMA ignore_check_constraints = OFF`} {
					if _, err := c.ExecContext(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
			},
			verified: k - 1, seq: k, reasons: []string{"the checkpoint at entry 7 does not sign this chain"},
		},
		{
			// Without its checkpoint the last entry is vouched for by nothing.
			name: "last checkpoint deleted",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				tamper(t, s, `DELETE FROM evidence_checkpoints WHERE seq = ?`, n)
			},
			verified: n - 1, seq: n, reasons: []string{"not vouched for by a signed checkpoint"},
		},
		{
			// Moving an entry's index time out of the day would hide it from the budget's
			// Count without touching the signed text.
			name: "time index moved",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				tamper(t, s, `UPDATE evidence SET unix_nano = ? WHERE seq = ?`, e[k-1].Time.Add(-24*time.Hour).UnixNano(), k)
			},
			verified: k - 1, seq: k, reasons: []string{"time index mismatch"},
		},
		{
			name: "middle row deleted",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				tamper(t, s, `DELETE FROM evidence WHERE seq = ?`, 11)
			},
			verified: 10, seq: 12, reasons: []string{"sequence gap: 12 follows 10"},
		},
		{
			name: "first row deleted",
			tamper: func(t *testing.T, s *Store, e []Entry) {
				tamper(t, s, `DELETE FROM evidence WHERE seq = 1`)
			},
			verified: 0, seq: 2, reasons: []string{"sequence gap: 2 follows 0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			s.now = stepClock(t0, time.Second+1234*time.Nanosecond)
			signer := newSeedSigner(1)
			entries := appendN(t, s, signer, n)
			if _, err := s.Verify(context.Background(), signer.Public()); err != nil {
				t.Fatalf("Verify(before tampering) = %v", err)
			}
			tt.tamper(t, s, entries)
			res, err := s.Verify(context.Background(), signer.Public())
			var ce *ChainError
			if !errors.As(err, &ce) {
				t.Fatalf("Verify(%s) error = %v, want *ChainError", tt.name, err)
			}
			if ce.Seq != tt.seq {
				t.Errorf("Verify(%s) failed at entry %d, want %d (%v)", tt.name, ce.Seq, tt.seq, err)
			}
			for _, r := range tt.reasons {
				if !strings.Contains(ce.Reason, r) {
					t.Errorf("Verify(%s) reason = %q, want it to contain %q", tt.name, ce.Reason, r)
				}
			}
			if want := fmt.Sprintf("entry %d: ", tt.seq); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Verify(%s) error = %q, want prefix %q", tt.name, err, want)
			}
			if res.Entries != tt.verified {
				t.Errorf("Verify(%s) verified %d entries before failing, want %d", tt.name, res.Entries, tt.verified)
			}
		})
	}
}

func TestVerifyHashMismatchMessage(t *testing.T) {
	s := openTemp(t)
	signer := newSeedSigner(1)
	e := appendN(t, s, signer, 3)
	tamper(t, s, `UPDATE evidence SET kind = 'refusal_sent_' WHERE seq = 2`)
	_, err := s.Verify(context.Background(), signer.Public())
	stored := e[1].Hash
	want := "entry 2: hash mismatch (stored " + hex.EncodeToString(stored[:4]) + "…, computed "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Verify() error = %v, want prefix %q", err, want)
	}
}

func TestVerifyWrongKeyFailsAtFirstEntry(t *testing.T) {
	s := openTemp(t)
	appendN(t, s, newSeedSigner(1), 5)
	res, err := s.Verify(context.Background(), newSeedSigner(2).Public())
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Seq != 1 || ce.Reason != "the checkpoint at entry 1: signature invalid" {
		t.Errorf("Verify(wrong key) = %v, want entry 1: signature invalid", err)
	}
	if res.Entries != 0 {
		t.Errorf("Verify(wrong key) verified %d entries, want 0", res.Entries)
	}
	if _, err := s.Verify(context.Background(), []byte{1, 2, 3}); err == nil || errors.As(err, &ce) {
		t.Errorf("Verify(3-byte key) error = %v, want a plain argument error", err)
	}
}

func checkpointSig(t *testing.T, s *Store, seq int64) []byte {
	t.Helper()
	var sig []byte
	if err := s.DB().QueryRow(`SELECT sig FROM evidence_checkpoints WHERE seq = ?`, seq).Scan(&sig); err != nil {
		t.Fatalf("checkpoint at %d: %v", seq, err)
	}
	return sig
}

func flipAt(s string, i int) string {
	b := []byte(s)
	b[i] ^= 1
	return string(b)
}

func flipByte(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 1
	return out
}

// A time text that reads as the right instant but is not canonical can only come from a
// signer that broke the encoding rules; Verify refuses it even when hash and signature match,
// so that one entry has exactly one encoding.
func TestVerifyRefusesNonCanonicalSignedTime(t *testing.T) {
	s := openTemp(t)
	s.now = stepClock(t0, time.Second+1234*time.Nanosecond)
	signer := newSeedSigner(1)
	e := appendN(t, s, signer, 3)[2]
	text := e.Time.Format("2006-01-02T15:04:05.999999999-07:00") // "+00:00", not "Z"
	if text == formatTime(e.Time) {
		t.Fatalf("test setup: %s is already canonical", text)
	}
	h := sha256.Sum256(canonicalEncoding(e.Seq, text, e.Kind, e.Peer, e.Interaction, e.Details, e.PrevHash))
	tamper(t, s, `UPDATE evidence SET time = ?, hash = ? WHERE seq = 3`, text, h[:])
	var cpTime string
	s.DB().QueryRow(`SELECT time FROM evidence_checkpoints WHERE seq = 3`).Scan(&cpTime)
	tamper(t, s, `UPDATE evidence_checkpoints SET hash = ?, sig = ? WHERE seq = 3`, h[:], signer.Sign(CheckpointEncoding(3, cpTime, h)))
	_, err := s.Verify(context.Background(), signer.Public())
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Seq != 3 || !strings.Contains(ce.Reason, "is not canonical RFC 3339 UTC") {
		t.Fatalf("Verify(entry 3 signed with time %q) = %v, want entry 3: not canonical", text, err)
	}
}

// B5: one checkpoint vouches for a whole commit group. Entries 4..7 are appended in one
// transaction, so entry 7's checkpoint is the only signature over 4, 5 and 6: a spoiled
// checkpoint, or a last group left without one, must be blamed on the group's first entry,
// with only the entries before the group counted as verified.
func TestVerifyBlamesTheWholeGroupB5(t *testing.T) {
	ctx := context.Background()
	signer := newSeedSigner(1)
	build := func(t *testing.T) (*Store, []Entry) {
		s := openTemp(t)
		entries := appendN(t, s, signer, 3)
		// Two groups of four: entries 4..7, then 8..11, each one transaction.
		for g := range 2 {
			err := s.writeTx(ctx, "group", func(ctx context.Context, tx *sql.Tx) error {
				for i := range 4 {
					e, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "grouped", Details: map[string]int{"g": g, "i": i}})
					if err != nil {
						return err
					}
					entries = append(entries, e)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if c := countRows(t, s, "evidence_checkpoints"); c != 5 {
			t.Fatalf("test setup: %d checkpoints, want 3 single entries and 2 groups", c)
		}
		return s, entries
	}
	for _, tt := range []struct {
		name     string
		tamper   func(t *testing.T, s *Store)
		seq      int64
		verified int64
		reason   string
	}{
		{"the group's checkpoint signature", func(t *testing.T, s *Store) {
			tamper(t, s, `UPDATE evidence_checkpoints SET sig = ? WHERE seq = 7`, flipByte(checkpointSig(t, s, 7), 40))
		}, 4, 3, "the checkpoint at entry 7: signature invalid"},
		{"the group's checkpoint moved to an entry inside it", func(t *testing.T, s *Store) {
			tamper(t, s, `UPDATE evidence_checkpoints SET seq = 6 WHERE seq = 7`)
		}, 4, 3, "the checkpoint at entry 6 does not sign this chain"},
		{"the last group's checkpoint deleted", func(t *testing.T, s *Store) {
			tamper(t, s, `DELETE FROM evidence_checkpoints WHERE seq = 11`)
		}, 8, 7, "not vouched for by a signed checkpoint"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, entries := build(t)
			if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != 11 || res.Checkpoints != 5 {
				t.Fatalf("Verify(before tampering) = %+v, %v; want 11 entries, 5 checkpoints", res, err)
			}
			tt.tamper(t, s)
			res, err := s.Verify(ctx, signer.Public())
			var ce *ChainError
			if !errors.As(err, &ce) || ce.Seq != tt.seq || !strings.Contains(ce.Reason, tt.reason) {
				t.Fatalf("Verify(%s) = %v, want entry %d: %s", tt.name, err, tt.seq, tt.reason)
			}
			if res.Entries != tt.verified || res.Head != entries[tt.verified-1].Hash {
				t.Errorf("Verify(%s) verified %d entries, head %x; want %d, %x", tt.name, res.Entries, res.Head[:4], tt.verified, entries[tt.verified-1].Hash[:4])
			}
		})
	}
}
