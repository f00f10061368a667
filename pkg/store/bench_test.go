package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkAppend measures durable appends (WAL, synchronous=FULL): one appender at a time
// (one commit, one checkpoint signature and one fsync per entry), and eight at once (grouped
// commits). The "baseline" case is a plain INSERT of the same row size in its own IMMEDIATE
// transaction on the same kind of database, so the ratio shows what hashing, signing and
// reading the head cost on top of the disk.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	b.Run("chain", func(b *testing.B) {
		s := openTemp(b)
		signer := newSeedSigner(1)
		in := EntryInput{Kind: "turn_completed", Peer: goldenPeer, Interaction: "ix-0001", Details: map[string]any{"counted": true}}
		start := time.Now()
		for b.Loop() {
			if _, err := s.Append(ctx, signer, in); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "entries/s")
	})
	b.Run("chain-8-appenders", func(b *testing.B) {
		s := openTemp(b)
		signer := newSeedSigner(1)
		in := EntryInput{Kind: "turn_completed", Peer: goldenPeer, Interaction: "ix-0001", Details: map[string]any{"counted": true}}
		b.SetParallelism(4) // 8 goroutines on 2 cores
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Append(ctx, signer, in); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "entries/s")
	})
	b.Run("baseline", func(b *testing.B) {
		s := openTemp(b)
		if _, err := s.DB().Exec(`CREATE TABLE plain (id INTEGER PRIMARY KEY, body TEXT, blob BLOB)`); err != nil {
			b.Fatal(err)
		}
		blob := make([]byte, 128)
		start := time.Now()
		for b.Loop() {
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Exec(`INSERT INTO plain(body, blob) VALUES(?, ?)`, `{"counted":true}`, blob); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "entries/s")
	})
}

// BenchmarkVerify measures a full verification of a 2000-entry chain, written one entry per
// commit (a checkpoint per entry) and by eight concurrent appenders (grouped commits).
func BenchmarkVerify(b *testing.B) {
	const n = 2000
	ctx := context.Background()
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("written-by-%d", writers), func(b *testing.B) {
			s := openTemp(b)
			signer := newSeedSigner(1)
			appendConcurrently(b, s, signer, n, writers)
			var res VerifyResult
			start := time.Now()
			for b.Loop() {
				var err error
				res, err = s.Verify(ctx, signer.Public())
				if err != nil || res.Entries != n {
					b.Fatalf("Verify = %d, %v", res.Entries, err)
				}
			}
			b.ReportMetric(float64(b.N*n)/time.Since(start).Seconds(), "entries/s")
			b.ReportMetric(float64(n)/float64(res.Checkpoints), "entries/checkpoint")
		})
	}
}

// appendConcurrently appends n entries from writers goroutines.
func appendConcurrently(tb testing.TB, s *Store, signer Signer, n, writers int) {
	var wg sync.WaitGroup
	per := n / writers
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per + boolInt(w < n%writers) {
				if _, err := s.Append(context.Background(), signer, EntryInput{Kind: "turn_completed", Peer: goldenPeer,
					Details: map[string]any{"w": w, "i": i}}); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
