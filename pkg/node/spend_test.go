//go:build !noautoreply

package node

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/pkg/autoreply"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/store"
)

// K1, K2, B1, B5: the spend history is the chain's run_counted cost, per local day and peer, as
// the engine writes it (autoreply.Ledger.Completed) and reads the day's spend back
// (Ledger.SpentByPeer); uncounted turns and other entries add nothing.
func TestSpendHistoryIsTheChainsCountedCostK1K2(t *testing.T) {
	dir := t.TempDir()
	id, _, err := identity.LoadOrCreate(filepath.Join(dir, "identity.key"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	l := autoreply.Ledger{Store: st, Signer: id}
	const a = "anaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	const b = "anbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	for _, r := range []struct {
		peer    string
		counted bool
		cost    int64
	}{{a, true, 150_000}, {a, true, 25}, {b, true, 1_000_000}, {b, false, 999}} {
		if err := l.Completed(ctx, r.peer, "ix", r.counted, map[string]any{"run": "r", "cost_micros": r.cost}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Append(ctx, id, store.EntryInput{Kind: "operator_note", Details: map[string]any{"cost_micros": 7}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h, err := spendHistoryOf(ctx, st, now, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Days) != 3 || h.Days[2].Day != now.Format("2006-01-02") {
		t.Fatalf("days = %+v, want three ending today", h.Days)
	}
	today := h.Days[2]
	if today.Spent != 1_150_025 || today.Runs != 3 || len(today.Peers) != 2 ||
		today.Peers[0] != (control.PeerDay{Peer: a, Spent: 150_025}) || today.Peers[1] != (control.PeerDay{Peer: b, Spent: 1_000_000}) {
		t.Fatalf("today = %+v, want 1.150025 over three counted runs of a and b", today)
	}
	start, end := autoreply.DayBounds(now)
	byPeer, err := l.SpentByPeer(ctx, start, end)
	if err != nil || byPeer[a] != 150_025 || byPeer[b] != 1_000_000 {
		t.Fatalf("the engine's own reading = %v, %v; the history must agree with it", byPeer, err)
	}
	for _, d := range h.Days[:2] {
		if d.Spent != 0 || d.Runs != 0 || len(d.Peers) != 0 {
			t.Fatalf("an earlier day = %+v, want nothing spent", d)
		}
	}
	// Seen from tomorrow, today's spend is yesterday's: the days are local calendar days.
	h, err = spendHistoryOf(ctx, st, end.Add(time.Hour), 2)
	if err != nil || h.Days[0].Spent != 1_150_025 || h.Days[1].Spent != 0 || !h.Days[0].Start.Equal(start) {
		t.Fatalf("from tomorrow = %+v, %v, want today's spend on the first day", h, err)
	}
}
