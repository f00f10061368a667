package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// B5: appends queued behind a commit under way share the next transaction, one checkpoint and
// one commit; they take sequence numbers in the order they were called; a write that fails
// in the group is rolled back alone; and each caller returns only once the group committed
// (another connection then reads its entry).
func TestGroupCommitB5(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	signer := newSeedSigner(1)
	appendN(t, s, signer, 2)

	// A write that holds the commit under way until released.
	release := make(chan struct{})
	holding := make(chan struct{})
	blocked := make(chan error, 1)
	go func() {
		blocked <- s.writeTx(ctx, "held", func(ctx context.Context, tx *sql.Tx) error {
			close(holding)
			<-release
			_, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "held"})
			return err
		})
	}()
	<-holding

	const n = 6
	queued := func() int {
		s.group.mu.Lock()
		defer s.group.mu.Unlock()
		return len(s.group.queue)
	}
	type result struct {
		i   int
		e   Entry
		err error
	}
	results := make(chan result, n)
	for i := range n {
		if i == 3 {
			// A write that fails after appending: rolled back alone, its entry gone.
			go func() {
				err := s.writeTx(ctx, "fails", func(ctx context.Context, tx *sql.Tx) error {
					if _, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "rolled_back"}); err != nil {
						return err
					}
					return errors.New("this write fails")
				})
				results <- result{i: i, err: err}
			}()
		} else {
			go func() {
				e, err := s.Append(ctx, signer, EntryInput{Kind: "queued", Details: map[string]int{"i": i}})
				results <- result{i: i, e: e, err: err}
			}()
		}
		testkit.WaitFor(t, fmt.Sprintf("write %d queued", i), func() bool { return queued() == i+1 })
	}
	checkpointsBefore := countRows(t, s, "evidence_checkpoints")
	close(release)
	if err := <-blocked; err != nil {
		t.Fatalf("held write: %v", err)
	}
	reader, err := Open(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	got := map[int]result{}
	for range n {
		r := <-results
		got[r.i] = r
		if r.err == nil {
			// Committed before the caller got its answer: another connection reads it.
			if c, err := reader.Count(ctx, CountFilter{Kinds: []string{"queued"}}); err != nil || c < 1 {
				t.Errorf("append %d returned before its entry was readable (count %d, %v)", r.i, c, err)
			}
		}
	}
	if got[3].err == nil || got[3].err.Error() != "this write fails" {
		t.Errorf("failing write = %v, want its own error", got[3].err)
	}
	wantSeq := int64(4) // entries 1, 2 by appendN, 3 by the held write
	for i := range n {
		if i == 3 {
			continue
		}
		if got[i].err != nil || got[i].e.Seq != wantSeq {
			t.Errorf("append %d = seq %d, %v; want seq %d (call order)", i, got[i].e.Seq, got[i].err, wantSeq)
		}
		wantSeq++
	}
	if c := countRows(t, s, "evidence_checkpoints") - checkpointsBefore; c != 2 {
		t.Errorf("%d checkpoints for the held write and the group behind it, want 2", c)
	}
	if c, _ := s.Count(ctx, CountFilter{Kinds: []string{"rolled_back"}}); c != 0 {
		t.Errorf("the failed write's entry is in the chain (%d)", c)
	}
	res, err := s.Verify(ctx, signer.Public())
	if err != nil || res.Entries != wantSeq-1 {
		t.Fatalf("Verify = %+v, %v; want %d entries", res, err, wantSeq-1)
	}
}

// B5: many concurrent appenders leave one gapless chain with every entry vouched for, fewer
// checkpoints than entries, and each caller's entries in its own call order.
func TestConcurrentAppendsVerifyB5(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	signer := newSeedSigner(1)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	seqs := make([][]int64, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e, err := s.Append(ctx, signer, EntryInput{Kind: "queued", Details: map[string]int{"w": w, "i": i}})
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				seqs[w] = append(seqs[w], e.Seq)
			}
		}()
	}
	wg.Wait()
	for w, ss := range seqs {
		for i := 1; i < len(ss); i++ {
			if ss[i] <= ss[i-1] {
				t.Errorf("worker %d: seq %d after %d", w, ss[i], ss[i-1])
			}
		}
	}
	res, err := s.Verify(ctx, signer.Public())
	if err != nil || res.Entries != workers*each {
		t.Fatalf("Verify = %+v, %v; want %d entries", res, err, workers*each)
	}
	t.Logf("%d entries, %d checkpoints", res.Entries, res.Checkpoints)
}

// B5: a database written before checkpoints (entries signed one by one) is migrated in place;
// its entries verify as they were, entries appended after the migration are vouched for by
// checkpoints, and the mixed chain verifies as one. A changed byte of an old entry's own
// signature is still named.
func TestMigrationKeepsSignedEntriesB5(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "anet.db")
	// Schema version 3: the newest a build before checkpoints (migration 4) knew.
	old, err := open(ctx, path, migrations[:3])
	if err != nil {
		t.Fatal(err)
	}
	signer := newSeedSigner(1)
	// Entries as the earlier build wrote them: each with its own signature of its hash.
	var prev [32]byte
	for i := int64(1); i <= 4; i++ {
		e := Entry{Seq: i, Time: t0.Add(time.Duration(i) * time.Second), Kind: "task_received", Details: []byte(fmt.Sprintf(`{"i":%d}`, i)), PrevHash: prev}
		e.Hash = ComputeHash(e)
		e.Sig = signer.Sign(e.Hash[:])
		if _, err := old.DB().ExecContext(ctx, `INSERT INTO evidence (`+entryColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.Seq, formatTime(e.Time), e.Time.UnixNano(), e.Kind, e.Peer, e.Interaction, string(e.Details), e.PrevHash[:], e.Hash[:], e.Sig); err != nil {
			t.Fatal(err)
		}
		prev = e.Hash
	}
	old.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatalf("open (migrating): %v", err)
	}
	defer s.Close()
	if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != 4 || res.Head != prev {
		t.Fatalf("Verify after migration = %+v, %v; want the 4 signed entries", res, err)
	}
	appendN(t, s, signer, 3)
	res, err := s.Verify(ctx, signer.Public())
	if err != nil || res.Entries != 7 || res.Checkpoints != 3 {
		t.Fatalf("Verify of the mixed chain = %+v, %v; want 7 entries, 3 checkpoints", res, err)
	}
	if _, err := s.DB().Exec(`DELETE FROM evidence WHERE seq = 1`); err == nil {
		t.Fatal("the migrated table lets an entry be deleted: its append-only trigger is gone")
	}
	var sig []byte
	s.DB().QueryRow(`SELECT sig FROM evidence WHERE seq = 2`).Scan(&sig)
	tamper(t, s, `UPDATE evidence SET sig = ? WHERE seq = 2`, flipByte(sig, 7))
	_, err = s.Verify(ctx, signer.Public())
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Seq != 2 || ce.Reason != "signature invalid" {
		t.Fatalf("Verify with entry 2's signature changed = %v, want entry 2: signature invalid", err)
	}
}

func countRows(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// B5: a caller whose context ends while its write runs in a group does not reach the shared
// transaction: its statements run on, the group commits, and the chain verifies. (SQLite
// would answer the cancellation by interrupting the statement, which rolls back the whole
// group's transaction.)
func TestGroupWriteOutlivesItsCallersContextB5(t *testing.T) {
	s := openTemp(t)
	signer := newSeedSigner(1)
	ctx, cancel := context.WithCancel(context.Background())
	err := s.writeTx(ctx, "cancelled midway", func(ctx context.Context, tx *sql.Tx) error {
		cancel()
		_, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "written_anyway"})
		return err
	})
	if err != nil {
		t.Fatalf("write whose caller gave up midway = %v, want it committed", err)
	}
	if res, err := s.Verify(context.Background(), signer.Public()); err != nil || res.Entries != 1 {
		t.Fatalf("Verify = %+v, %v; want the one entry", res, err)
	}
	// A caller whose context ended before its write began is not run.
	if err := s.writeTx(ctx, "too late", func(context.Context, *sql.Tx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("write after its caller gave up = %v, want context.Canceled", err)
	}
}

// B5: Verify reads entries and checkpoints in one snapshot, so a chain that grows while it is
// read verifies every time, as far as it had grown, never with entries its checkpoints do not
// yet cover.
func TestVerifyWhileAppendingB5(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	signer := newSeedSigner(1)
	appendN(t, s, signer, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Append(ctx, signer, EntryInput{Kind: "queued", Details: map[string]int{"w": w, "i": i}}); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}()
	}
	var last int64
	deadline := time.Now().Add(time.Minute)
	for last < 300 && !t.Failed() {
		if time.Now().After(deadline) {
			t.Errorf("the chain reached only %d entries in a minute of appending", last)
			break
		}
		res, err := s.Verify(ctx, signer.Public())
		if err != nil || res.Entries < last {
			t.Errorf("Verify while appending = %+v, %v; want no error and at least %d entries", res, err, last)
			break
		}
		last = res.Entries
	}
	close(stop)
	wg.Wait()
	if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries < last {
		t.Fatalf("Verify after appending = %+v, %v", res, err)
	}
	t.Logf("verified up to %d entries while appending", last)
}
