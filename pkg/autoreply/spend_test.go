package autoreply

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/store"
)

// completeRun records a counted run of peer that cost cost, as turn() does.
func completeRun(t *testing.T, l Ledger, peer string, cost money.Micros) {
	t.Helper()
	d := spendDetails(money.Spend{Model: "m", Tokens: money.Tokens{Input: 10, Output: 5}, Cost: cost})
	d["run"] = "r"
	if err := l.Completed(context.Background(), peer, "ix", true, d, nil); err != nil {
		t.Fatal(err)
	}
}

// K2 at the caps' edges, like B2–B5: a peer or the node that has spent its cap is refused
// with the day's end; one micro-unit below, it runs with what is left as its allowance;
// runs in flight hold their allowance, so a full day waits instead of overshooting.
func TestSchedulerSpendCapsK2(t *testing.T) {
	ctx := context.Background()
	l := testLedger(t)
	a, b, c := newAID(t), newAID(t), newAID(t)
	caps := &SpendCaps{PerDay: 1_000_000, PerPeer: 400_000}
	s := NewScheduler(Limits{PerDay: 100, PerPeer: 100, Spend: caps}, l, nil)
	admit := func(peer string, want Verdict, wantAllowance money.Micros) *Ticket {
		t.Helper()
		tk := admitWant(t, s, peer, want)
		if want == Admitted {
			if got := tk.Allowance(); got == nil || *got != wantAllowance {
				t.Fatalf("allowance = %v, want %s", got, wantAllowance)
			}
		}
		return tk
	}
	// a spends 399999 of its 400000: one micro-unit left, which is its next allowance.
	tk := admit(a, Admitted, 400_000)
	completeRun(t, l, a, 399_999)
	tk.Release()
	tk = admit(a, Admitted, 1)
	completeRun(t, l, a, 1)
	tk.Release()
	// Exactly at the cap: refused (B4's day end).
	admit(a, Spent, 0)
	// b and c: the day has 600000 left; b holds 400000 in flight, c gets the 200000 left.
	tb := admit(b, Admitted, 400_000)
	tc := admit(c, Admitted, 200_000)
	tc.Release() // c's run ended uncounted (nothing ran)
	completeRun(t, l, b, 100_000)
	tb.Release()
	// Day: 500000 spent. d holds 400000; b gets what the day has left beside it.
	d := newAID(t)
	td := admit(d, Admitted, 400_000)
	tb = admit(b, Admitted, 100_000)
	tb.Release() // uncounted
	// c takes the day's last 100000; then, with a slot free, the day is held by d's run in
	// flight: e waits (d may end cheaper), it is not refused.
	tc = admit(c, Admitted, 100_000)
	tc.Release()
	completeRun(t, l, c, 100_000)
	e := newAID(t)
	admit(e, Wait, 0)
	u, err := s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.Spend.Spent != 600_000 || u.Spend.InFlight != 400_000 || u.Spend.Left != 0 || len(u.Spend.Peers) != 4 {
		t.Fatalf("Usage.Spend = %+v, want 600000 spent, 400000 in flight, 0 left, 4 peers", u.Spend)
	}
	for _, p := range u.Spend.Peers {
		if p.Peer == a && (p.Spent != 400_000 || p.Left != 0) || p.Peer == d && (p.InFlight != 400_000 || p.Left != 0) {
			t.Fatalf("peer %+v: want a 400000 spent, d 400000 in flight, none left", p)
		}
	}
	completeRun(t, l, d, 500_000) // a run can pass its allowance by its last estimate's error
	td.Release()
	// 1100000 spent of 1000000: everyone is refused for the rest of the day.
	admit(e, Spent, 0)
}

// K2: a spend cap of 0 holds untrusted tasks like a run budget of 0 (B3).
func TestSchedulerSpendZeroHoldsK2(t *testing.T) {
	for _, caps := range []SpendCaps{{PerDay: 0, PerPeer: 5}, {PerDay: 5, PerPeer: 0}} {
		s := NewScheduler(Limits{PerDay: 20, PerPeer: 5, Spend: &caps}, testLedger(t), nil)
		if tk, v, until, err := s.Admit(context.Background(), newAID(t)); tk != nil || v != HoldSpend || !until.IsZero() || err != nil {
			t.Fatalf("Admit with %+v = %v, %v, %v, want hold_spend", caps, v, until, err)
		}
	}
}

// K1, B5: the day's spend is rebuilt from the chain after a restart; run_counted carries the
// run's tokens and cost, and nothing of the task.
func TestLedgerSpendK1(t *testing.T) {
	ctx := context.Background()
	l := testLedger(t)
	a, b := newAID(t), newAID(t)
	start, end := DayBounds(time.Now())
	completeRun(t, l, a, 1234)
	completeRun(t, l, b, 5)
	if err := l.Completed(ctx, b, "ix", false, spendDetails(money.Spend{Cost: 999}), nil); err != nil { // trusted: not counted
		t.Fatal(err)
	}
	path := l.Store.Path()
	l.Store.Close()
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l = Ledger{Store: st, Signer: l.Signer}
	for _, c := range []struct {
		peer string
		want money.Micros
	}{{"", 1239}, {a, 1234}, {b, 5}} {
		if got, err := l.Spent(ctx, c.peer, start, end); err != nil || got != c.want {
			t.Fatalf("Spent(%q) after reopening = %d, %v, want %d", c.peer, got, err, c.want)
		}
	}
	entries, err := st.List(ctx, store.ListOptions{Kind: KindRunCounted, Peer: a})
	if err != nil || len(entries) != 1 {
		t.Fatalf("run_counted of a = %v, %v", entries, err)
	}
	var d map[string]any
	json.Unmarshal(entries[0].Details, &d)
	tok, _ := d["tokens"].(map[string]any)
	if d["cost_micros"] != float64(1234) || d["model"] != "m" || tok["input"] != float64(10) || tok["output"] != float64(5) || d["run"] != "r" {
		t.Fatalf("run_counted details = %v, want run, model, tokens and cost_micros", d)
	}
}
