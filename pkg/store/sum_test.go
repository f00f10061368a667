package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// K2, B5: the day's spend is rebuilt from the chain: cost_micros summed exactly over the
// chosen kinds, per peer and in all, within the time bounds; a missing field counts 0.
func TestSumDetailK2(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	other := "an" + strings.Repeat("b", 52)
	for _, e := range []EntryInput{
		{Kind: "run_counted", Peer: goldenPeer, Details: map[string]any{"cost_micros": 1_000_001}},
		{Kind: "run_counted", Peer: goldenPeer, Details: map[string]any{"cost_micros": 9_007_199_254_740_993}}, // above 2^53: exact only as an integer
		{Kind: "run_counted", Peer: other, Details: map[string]any{"cost_micros": 7}},
		{Kind: "run_counted", Peer: other, Details: map[string]any{"run": "no cost field"}},
		{Kind: "turn_completed", Peer: other, Details: map[string]any{"cost_micros": 1000}},
	} {
		if _, err := s.Append(ctx, signer, e); err != nil {
			t.Fatal(err)
		}
	}
	f := CountFilter{Kinds: []string{"run_counted"}}
	by, err := s.SumByPeer(ctx, f, "cost_micros")
	if err != nil || by[goldenPeer] != 9_007_199_255_740_994 || by[other] != 7 || len(by) != 2 {
		t.Fatalf("SumByPeer = %v, %v, want %s: 9007199255740994, %s: 7", by, err, goldenPeer, other)
	}
	f.Peer = other
	if n, err := s.Sum(ctx, f, "cost_micros"); err != nil || n != 7 {
		t.Fatalf("Sum(peer) = %d, %v, want 7", n, err)
	}
	f = CountFilter{Kinds: []string{"run_counted"}, From: time.Now().Add(time.Hour)}
	if n, err := s.Sum(ctx, f, "cost_micros"); err != nil || n != 0 {
		t.Fatalf("Sum(from the future) = %d, %v, want 0", n, err)
	}
	if _, err := s.Sum(ctx, f, "x') OR 1=1 --"); err == nil {
		t.Fatal("Sum with a field that is not a plain name = nil error")
	}
}
