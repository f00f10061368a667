package autoreply

import (
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
