package logging

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

const (
	// asyncDelay is how long a record may wait before it is written: records that arrive
	// within it share one batch, and no request wakes a writer of its own.
	asyncDelay = 10 * time.Millisecond
	// maxQueued bounds the records waiting; past it Handle writes the batch itself, so that
	// records are never dropped and memory stays bounded.
	maxQueued = 4096
)

// Async wraps h so that Handle only queues a copy of the record; formatting and the write
// system call happen later, in order, off the caller's path (a model request logs its line
// before the server has finished the response). Records are written within asyncDelay, or at
// once when maxQueued are waiting. Flush writes what is queued; call it before the process
// exits.
type Async struct {
	h slog.Handler
	q *asyncQueue
}

type asyncQueue struct {
	mu    sync.Mutex // guards items and armed
	items []queued
	armed bool
	timer *time.Timer

	writeMu sync.Mutex // held while a batch is written, so batches keep their order
	// out, when the handlers write into it, collects a batch's lines for one write.
	out *batchWriter
}

// batchWriter holds what handlers write during a drain and writes it at the end in one call.
type batchWriter struct {
	w   io.Writer
	buf []byte
}

func (b *batchWriter) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *batchWriter) flush() {
	if len(b.buf) > 0 {
		// A log that cannot be written has nowhere to report that.
		_, _ = b.w.Write(b.buf)
		b.buf = b.buf[:0]
	}
}

type queued struct {
	h slog.Handler
	r slog.Record
}

// NewAsync returns the async form of h.
func NewAsync(h slog.Handler) *Async {
	q := &asyncQueue{}
	q.timer = time.AfterFunc(time.Hour, q.drain)
	q.timer.Stop()
	return &Async{h: h, q: q}
}

func (a *Async) Enabled(ctx context.Context, l slog.Level) bool { return a.h.Enabled(ctx, l) }

func (a *Async) WithAttrs(as []slog.Attr) slog.Handler { return &Async{h: a.h.WithAttrs(as), q: a.q} }

func (a *Async) WithGroup(name string) slog.Handler { return &Async{h: a.h.WithGroup(name), q: a.q} }

// Handle queues r.
func (a *Async) Handle(_ context.Context, r slog.Record) error {
	q := a.q
	q.mu.Lock()
	q.items = append(q.items, queued{h: a.h, r: r.Clone()})
	full := len(q.items) >= maxQueued
	if !q.armed && !full {
		q.armed = true
		q.timer.Reset(asyncDelay)
	}
	q.mu.Unlock()
	if full {
		q.drain()
	}
	return nil
}

// Flush returns once every record queued before it is written.
func (a *Async) Flush() { a.q.drain() }

func (q *asyncQueue) drain() {
	q.writeMu.Lock()
	defer q.writeMu.Unlock()
	q.mu.Lock()
	batch := q.items
	q.items, q.armed = nil, false
	q.mu.Unlock()
	for _, it := range batch {
		_ = it.h.Handle(context.Background(), it.r)
	}
	if q.out != nil {
		q.out.flush()
	}
}
