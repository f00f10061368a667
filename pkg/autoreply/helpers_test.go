package autoreply

import (
	"context"
	"path/filepath"
	"testing"

	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/store"
)

// testLedger is a real store (SQLite in a temp dir) with a real node key.
func testLedger(t *testing.T) Ledger {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "anet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return Ledger{Store: st, Signer: id}
}

// newAID returns a fresh valid peer aid.
func newAID(t *testing.T) string {
	t.Helper()
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return id.AID()
}

// admitWant asks s to admit a task of peer and checks the verdict: budget refusals carry the
// day's end, nothing else does.
func admitWant(t *testing.T, s *Scheduler, peer string, want Verdict) *Ticket {
	t.Helper()
	tk, v, until, err := s.Admit(context.Background(), peer)
	if err != nil || v != want {
		t.Fatalf("Admit = %v, %v, want %v", v, err, want)
	}
	if (v == Spent) == until.IsZero() {
		t.Fatalf("Admit = %v with until %v: budget refusals carry the day's end, nothing else does", v, until)
	}
	return tk
}
