//go:build anettest && linux

package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/store"
)

const (
	appendWorkers = 8
	appendSeconds = 3
	verifyEntries = 10000
)

type seedSigner struct{ priv ed25519.PrivateKey }

func (s seedSigner) Sign(msg []byte) []byte    { return ed25519.Sign(s.priv, msg) }
func (s seedSigner) Public() ed25519.PublicKey { return s.priv.Public().(ed25519.PublicKey) }

// runEvidence measures durable appends per second with eight appenders (a node's intake,
// scheduler and outbox append at once), next to plain one-row INSERT transactions on the same
// kind of database, and full verification of a chain they wrote.
func runEvidence(cfg config, rep *report) error {
	tmp, err := os.MkdirTemp("", "anet-bench-evidence-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()
	signer := &seedSigner{priv: testkit.SeedKey(1)}
	s, err := store.Open(filepath.Join(tmp, "chain.db"))
	if err != nil {
		return err
	}
	defer s.Close()
	in := store.EntryInput{Kind: "turn_completed", Interaction: "ix-0001", Details: map[string]any{"counted": true, "run": "r-0001"}}
	var n atomic.Int64
	appendFor := func(d time.Duration, upTo int64) error {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var appendErr error
		stop := time.Now().Add(d)
		for range appendWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) && n.Load() < upTo {
					if _, err := s.Append(ctx, signer, in); err != nil {
						mu.Lock()
						appendErr = err
						mu.Unlock()
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		return appendErr
	}
	start := time.Now()
	if err := appendFor(appendSeconds*time.Second, 1<<62); err != nil {
		return err
	}
	perSec := float64(n.Load()) / time.Since(start).Seconds()

	plain, err := store.Open(filepath.Join(tmp, "plain.db"))
	if err != nil {
		return err
	}
	defer plain.Close()
	if _, err := plain.DB().Exec(`CREATE TABLE plain (id INTEGER PRIMARY KEY, body TEXT, blob BLOB)`); err != nil {
		return err
	}
	blob := make([]byte, 128)
	var m int64
	start = time.Now()
	for stop := start.Add(appendSeconds * time.Second); time.Now().Before(stop); m++ {
		tx, err := plain.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO plain(body, blob) VALUES(?, ?)`, `{"counted":true,"run":"r-0001"}`, blob); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	plainPerSec := float64(m) / time.Since(start).Seconds()
	rep.add(metric{What: fmt.Sprintf("evidence append, durable (%d appenders)", appendWorkers), Unit: "/s", Ours: perSec,
		Anchors: []anchor{{Name: "plain INSERT", Value: plainPerSec}}, RatioTo: "plain INSERT", Ratio: perSec / plainPerSec,
		Aim: "≥ 5000/s", Met: perSec >= 5000})

	// Verify a chain of verifyEntries written the same way (what was appended above, topped up
	// by the same eight appenders).
	if err := appendFor(time.Hour, verifyEntries); err != nil {
		return err
	}
	var best float64
	var res store.VerifyResult
	for range 3 {
		t0 := time.Now()
		if res, err = s.Verify(ctx, signer.Public()); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		best = max(best, float64(res.Entries)/time.Since(t0).Seconds())
	}
	rep.add(metric{What: fmt.Sprintf("evidence verify (%d entries, %.1f per checkpoint)", res.Entries, float64(res.Entries)/float64(max(res.Checkpoints, 1))),
		Unit: "/s", Ours: best, Aim: "≥ 100000/s", Met: best >= 100000})
	return nil
}
