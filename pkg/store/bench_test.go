package store

import (
	"context"
	"testing"
	"time"
)

// BenchmarkAppend measures durable appends (WAL, synchronous=FULL: one fsync per entry).
// The "baseline" case is a plain INSERT of the same row size in its own IMMEDIATE
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

// BenchmarkVerify measures a full verification of a 2000-entry chain.
func BenchmarkVerify(b *testing.B) {
	const n = 2000
	s := openTemp(b)
	signer := newSeedSigner(1)
	appendN(b, s, signer, n)
	ctx := context.Background()
	start := time.Now()
	for b.Loop() {
		res, err := s.Verify(ctx, signer.Public())
		if err != nil || res.Entries != n {
			b.Fatalf("Verify = %d, %v", res.Entries, err)
		}
	}
	b.ReportMetric(float64(b.N*n)/time.Since(start).Seconds(), "entries/s")
}
