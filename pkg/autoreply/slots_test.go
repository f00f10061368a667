package autoreply

import (
	"context"
	"testing"
	"time"
)

// B2–B4, B6: the scheduler over a real chain.
func TestSchedulerSlotsAndBudget(t *testing.T) {
	ctx := context.Background()
	l := testLedger(t)
	a, b, c := newAID(t), newAID(t), newAID(t)
	s := NewScheduler(Limits{PerDay: 3, PerPeer: 2}, l, nil)
	admit := func(peer string, want Verdict) *Ticket {
		t.Helper()
		return admitWant(t, s, peer, want)
	}
	complete := func(tk *Ticket, peer string) {
		t.Helper()
		if err := l.Completed(ctx, peer, "ix", true, map[string]any{"run": "r"}, nil); err != nil {
			t.Fatal(err)
		}
		tk.Release()
	}

	// B6: one run per peer, two in all; the rest wait (no refusal).
	ta := admit(a, Admitted)
	admit(a, Wait)
	tb := admit(b, Admitted)
	admit(c, Wait)
	changed := s.Changed()
	complete(ta, a)
	select {
	case <-changed:
	default:
		t.Fatal("Changed() not closed when a run ended: waiting tasks would sleep until the next scan")
	}
	// a: 1 counted; b in flight; total 1 + 1 in flight.
	ta = admit(a, Admitted)
	// Three of three are counted or in flight: c waits (the runs may end uncounted), it is
	// not refused.
	admit(c, Wait)
	complete(ta, a)
	// a has used its 2 per peer (B2): refused with the day's end (B4).
	admit(a, Spent)
	// 2 counted and b in flight: a slot is free, but the day's last run may be b's, so c
	// waits rather than take a run the budget may not have.
	admit(c, Wait)
	complete(tb, b)
	// 3 of 3 for the day: everyone is refused now, c included.
	_, v, until, err := s.Admit(ctx, c)
	_, end := DayBounds(time.Now())
	if err != nil || v != Spent || !until.Equal(end) {
		t.Fatalf("Admit(c) after 3 runs = %v, %v, %v, want spent until %v", v, until, err, end)
	}
	u, err := s.Usage(ctx)
	if err != nil || u.RunsToday != 3 || u.Left != 0 || u.InFlight != 0 {
		t.Fatalf("Usage = %+v, %v, want 3 today, 0 left", u, err)
	}
}

// B3: a budget of 0 holds tasks: no slot, no refusal.
func TestSchedulerZeroHolds(t *testing.T) {
	for _, lim := range []Limits{{PerDay: 0, PerPeer: 5}, {PerDay: 20, PerPeer: 0}} {
		s := NewScheduler(lim, testLedger(t), nil)
		if tk, v, until, err := s.Admit(context.Background(), newAID(t)); tk != nil || v != Hold || !until.IsZero() || err != nil {
			t.Fatalf("Admit with %+v = %v, %v, %v, want hold", lim, v, until, err)
		}
	}
}

// The budget follows the scheduler's clock: runs counted today do not count tomorrow.
func TestSchedulerNewDay(t *testing.T) {
	ctx := context.Background()
	l := testLedger(t)
	a := newAID(t)
	now := time.Now()
	s := NewScheduler(Limits{PerDay: 1, PerPeer: 1}, l, func() time.Time { return now })
	tk, v, _, err := s.Admit(ctx, a)
	if err != nil || v != Admitted {
		t.Fatalf("Admit = %v, %v", v, err)
	}
	if err := l.Completed(ctx, a, "ix", true, nil, nil); err != nil {
		t.Fatal(err)
	}
	tk.Release()
	if _, v, _, _ := s.Admit(ctx, a); v != Spent {
		t.Fatalf("Admit after the day's run = %v, want spent", v)
	}
	_, end := DayBounds(now)
	now = end // the next local day starts
	if _, v, _, err := s.Admit(ctx, a); v != Admitted || err != nil {
		t.Fatalf("Admit on the next day = %v, %v, want admitted", v, err)
	}
}
