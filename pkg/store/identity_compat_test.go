package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/store"
)

// The store keeps its own Signer interface (it does not import pkg/identity); this checks
// the node's real identity satisfies it and signs a chain that verifies.
var _ store.Signer = (*identity.Identity)(nil)

func TestIdentitySignsChain(t *testing.T) {
	dir := t.TempDir()
	id, _, err := identity.LoadOrCreate(filepath.Join(dir, "identity.key"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(filepath.Join(dir, "anet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := s.Append(ctx, id, store.EntryInput{Kind: "task_received", Peer: id.AID()}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s.Verify(ctx, id.Public()); err != nil || res.Entries != 3 {
		t.Errorf("Verify(identity key) = %d, %v; want 3, nil", res.Entries, err)
	}
}
