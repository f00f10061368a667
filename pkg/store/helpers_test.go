package store

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// seedSigner is a Signer over a key derived from a fixed seed, so golden values are stable.
type seedSigner struct{ priv ed25519.PrivateKey }

func newSeedSigner(first byte) seedSigner { return seedSigner{priv: testkit.SeedKey(first)} }

func (s seedSigner) Sign(msg []byte) []byte    { return ed25519.Sign(s.priv, msg) }
func (s seedSigner) Public() ed25519.PublicKey { return s.priv.Public().(ed25519.PublicKey) }

// goldenPeer is a valid aid (the one pkg/identity derives from seed 1..32).
const goldenPeer = "anpg2vmlup4zkpsqdywejorkmlu6ib7bj242k35v7a4oiqxlieszsa"

// stepClock returns a clock that starts at start and advances by step on every call.
func stepClock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := t
		t = t.Add(step)
		return now
	}
}

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "anet.db"))
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// appendN appends n entries with varied fields; entry i has details {"i":i}.
func appendN(t testing.TB, s *Store, signer Signer, n int) []Entry {
	t.Helper()
	ctx := context.Background()
	out := make([]Entry, 0, n)
	kinds := []string{"task_received", "turn_completed", "refusal_sent"}
	for i := 1; i <= n; i++ {
		peer := ""
		if i%2 == 0 {
			peer = goldenPeer
		}
		e, err := s.Append(ctx, signer, EntryInput{
			Kind:        kinds[i%len(kinds)],
			Peer:        peer,
			Interaction: fmt.Sprintf("ix-%04d", i),
			Details:     map[string]any{"i": i, "note": "entry"},
		})
		if err != nil {
			t.Fatalf("Append(%d) error = %v", i, err)
		}
		out = append(out, e)
	}
	return out
}

// tamper runs SQL as someone holding the database file would: the append-only triggers are
// dropped first, so the test shows Verify catches what the triggers cannot stop.
func tamper(t *testing.T, s *Store, query string, args ...any) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{`DROP TRIGGER IF EXISTS evidence_no_update`, `DROP TRIGGER IF EXISTS evidence_no_delete`,
		`DROP TRIGGER IF EXISTS evidence_checkpoints_no_update`, `DROP TRIGGER IF EXISTS evidence_checkpoints_no_delete`,
		`DROP TRIGGER IF EXISTS receipts_no_update`, `DROP TRIGGER IF EXISTS receipts_no_delete`, query} {
		var a []any
		if q == query {
			a = args
		}
		if _, err := s.DB().ExecContext(ctx, q, a...); err != nil {
			t.Fatalf("tamper %q: %v", q, err)
		}
	}
}
