package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"anet.dev/anet/internal/testkit"
)

// appendHook records what SetOnAppend's hook hears, and checks, as it hears each kind of a
// write the store runs, that the entry is already committed: another connection reads it.
type appendHook struct {
	t      *testing.T
	reader *Store

	mu    sync.Mutex
	kinds []string
}

func (h *appendHook) hear(kind string) {
	// own_tx is appended in the caller's own transaction, whose commit the store cannot see.
	if kind != "own_tx" {
		n, err := h.reader.Count(context.Background(), CountFilter{Kinds: []string{kind}})
		if err != nil || n == 0 {
			h.t.Errorf("hook heard %s before another connection could read it (count %d, %v)", kind, n, err)
		}
	}
	h.mu.Lock()
	h.kinds = append(h.kinds, kind)
	h.mu.Unlock()
}

func (h *appendHook) heard() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(slices.Values(h.kinds))
}

// The evidence hook (the node's anet_evidence_appends_total) hears every committed entry
// once, by kind, and never one whose write was rolled back: not a lone write that failed,
// not a failed write in a group beside writes that committed.
func TestOnAppendHearsCommittedEntries(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	reader, err := Open(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reader.Close() })
	h := &appendHook{t: t, reader: reader}
	s.SetOnAppend(h.hear)
	signer := newSeedSigner(1)

	if _, err := s.Append(ctx, signer, EntryInput{Kind: "node_started"}); err != nil {
		t.Fatal(err)
	}
	if got := h.heard(); !slices.Equal(got, []string{"node_started"}) {
		t.Fatalf("after one Append the hook heard %v", got)
	}

	// A lone write that appends, then fails: rolled back, not heard.
	err = s.writeTx(ctx, "fails", func(ctx context.Context, tx *sql.Tx) error {
		if _, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "rolled_back"}); err != nil {
			return err
		}
		return errors.New("this write fails")
	})
	if err == nil {
		t.Fatal("the failing write succeeded")
	}

	// A group: a write holds the commit while a failing one and two good ones queue.
	release, holding := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.writeTx(ctx, "held", func(ctx context.Context, tx *sql.Tx) error {
			close(holding)
			<-release
			_, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "held"})
			return err
		})
	}()
	<-holding
	queued := func() int {
		s.group.mu.Lock()
		defer s.group.mu.Unlock()
		return len(s.group.queue)
	}
	done := make(chan error, 3)
	for i, kind := range []string{"queued", "rolled_back", "queued"} {
		go func() {
			done <- s.writeTx(ctx, kind, func(ctx context.Context, tx *sql.Tx) error {
				if _, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: kind}); err != nil {
					return err
				}
				if kind == "rolled_back" {
					return errors.New("this write fails")
				}
				return nil
			})
		}()
		testkit.WaitFor(t, fmt.Sprintf("write %d queued", i), func() bool { return queued() == i+1 })
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	failed := 0
	for range 3 {
		if err := <-done; err != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d writes of the group failed, want 1", failed)
	}

	// The caller's own transaction: heard when inserted (its commit is the caller's).
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "own_tx"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	if n, _ := reader.Count(ctx, CountFilter{Kinds: []string{"rolled_back"}}); n != 0 {
		t.Fatalf("%d rolled_back entries in the chain", n)
	}
	want := []string{"held", "node_started", "own_tx", "queued", "queued"}
	if got := h.heard(); !slices.Equal(got, want) {
		t.Fatalf("the hook heard %v, want %v", got, want)
	}

	s.SetOnAppend(nil)
	if _, err := s.Append(ctx, signer, EntryInput{Kind: "after"}); err != nil {
		t.Fatal(err)
	}
	if got := h.heard(); len(got) != len(want) {
		t.Fatalf("the hook heard %v after it was removed", got)
	}
}
