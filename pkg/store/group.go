package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// Group commit. Every write transaction of this process (writeTx) joins a queue; whoever finds
// no commit under way leads: it takes every waiting job, runs them in arrival order in one
// transaction, each inside its own savepoint (a job that fails is rolled back alone), signs
// one checkpoint of the new head if any job appended evidence, and commits once — one fsync
// for the whole group. Every caller returns only after that commit, so only once its writes
// are durable (synchronous=FULL). Jobs that arrive meanwhile form the next group, led by the
// first of them. Other processes are still excluded by BEGIN IMMEDIATE.

// maxGroup bounds the jobs of one transaction, so that one commit stays short.
const maxGroup = 256

type writeJob struct {
	ctx  context.Context
	op   string
	fn   func(ctx context.Context, tx *sql.Tx) error
	err  error
	done bool
	wake chan struct{} // the job is done, or its caller leads the next group
}

// groupTx is what AppendTx needs to know about a transaction the group committer runs.
type groupTx struct {
	signer Signer // set when a job appended evidence; the group signs its head
	// kinds are the entries the jobs appended, told to the store's hook once committed.
	kinds []string
}

type committer struct {
	mu      sync.Mutex // guards the fields that follow
	queue   []*writeJob
	leading bool
	open    map[*sql.Tx]*groupTx
}

// groupOf returns the group state of tx, or nil when tx is the caller's own transaction.
func (s *Store) groupOf(tx *sql.Tx) *groupTx {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	return s.group.open[tx]
}

// writeTx runs fn in a read-write transaction shared with the writes queued beside it and
// returns once that transaction has committed. fn's writes are rolled back alone if it fails.
// fn must run its statements with the context it is given: ctx without its cancellation.
// SQLite answers a cancelled statement by interrupting it, and an interrupted write rolls
// back the whole transaction — every caller's of the group, leaving later statements to
// commit on their own. A job whose ctx has ended before it runs is skipped instead.
func (s *Store) writeTx(ctx context.Context, op string, fn func(ctx context.Context, tx *sql.Tx) error) error {
	j := &writeJob{ctx: ctx, op: op, fn: fn, wake: make(chan struct{}, 1)}
	g := &s.group
	g.mu.Lock()
	g.queue = append(g.queue, j)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if !lead {
		<-j.wake
		if j.done {
			return s.noteWrite(j.err)
		}
	}
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()

	s.commitGroup(batch)

	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].wake <- struct{}{} // the next group's leader
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	for _, b := range batch {
		if b != j {
			b.wake <- struct{}{}
		}
	}
	return s.noteWrite(j.err)
}

// commitGroup runs batch in one transaction and sets each job's outcome.
func (s *Store) commitGroup(batch []*writeJob) {
	fail := func(err error) {
		for _, b := range batch {
			if b.err == nil {
				b.err = err
			}
			b.done = true
		}
	}
	// The transaction serves many callers: one caller's cancellation must not end it.
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		fail(fmt.Errorf("%s: begin: %w", batch[0].op, err))
		return
	}
	defer tx.Rollback()
	gt := &groupTx{}
	s.group.mu.Lock()
	if s.group.open == nil {
		s.group.open = map[*sql.Tx]*groupTx{}
	}
	s.group.open[tx] = gt
	s.group.mu.Unlock()
	defer func() {
		s.group.mu.Lock()
		delete(s.group.open, tx)
		s.group.mu.Unlock()
	}()
	ok := 0
	// A lone write needs no savepoint: if it fails, the whole transaction is rolled back.
	alone := len(batch) == 1
	for _, b := range batch {
		if err := b.ctx.Err(); err != nil {
			b.err = fmt.Errorf("%s: %w", b.op, err)
			continue
		}
		if !alone {
			if _, err := s.txExec(ctx, tx, `SAVEPOINT job`); err != nil {
				fail(fmt.Errorf("%s: savepoint: %w", b.op, err))
				return
			}
		}
		signer, kinds := gt.signer, len(gt.kinds)
		if err := b.fn(context.WithoutCancel(b.ctx), tx); err != nil {
			b.err = err
			gt.signer, gt.kinds = signer, gt.kinds[:kinds]
			if !alone {
				if _, rerr := s.txExec(ctx, tx, `ROLLBACK TO job`); rerr != nil {
					fail(fmt.Errorf("%s: roll back: %w", b.op, rerr))
					return
				}
			}
		} else {
			ok++
		}
		if !alone {
			if _, err := s.txExec(ctx, tx, `RELEASE job`); err != nil {
				fail(fmt.Errorf("%s: release savepoint: %w", b.op, err))
				return
			}
		}
	}
	if gt.signer != nil {
		if err := s.signCheckpoint(ctx, tx, gt.signer); err != nil {
			fail(fmt.Errorf("%s: %w", batch[0].op, err))
			return
		}
	}
	if ok > 0 {
		if err := tx.Commit(); err != nil {
			fail(fmt.Errorf("%s: commit: %w", batch[0].op, err))
			return
		}
		s.appended(gt.kinds...)
	}
	fail(nil)
}
