package autoreply

import (
	"context"
	"testing"
	"time"

	"anet.dev/anet/pkg/store"
)

// B1: the budget day is the local calendar day, DST days included (23 and 25 hours long).
func TestDayBounds(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatalf("load zone (tzdata is needed for the DST cases): %v", err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		at       time.Time
		start    time.Time
		length   time.Duration
		startDay int
	}{
		{"ordinary day", time.Date(2026, 6, 10, 15, 4, 5, 0, ny), time.Date(2026, 6, 10, 0, 0, 0, 0, ny), 24 * time.Hour, 10},
		{"spring forward is 23h", time.Date(2026, 3, 8, 12, 0, 0, 0, ny), time.Date(2026, 3, 8, 0, 0, 0, 0, ny), 23 * time.Hour, 8},
		{"fall back is 25h", time.Date(2026, 11, 1, 23, 59, 0, 0, ny), time.Date(2026, 11, 1, 0, 0, 0, 0, ny), 25 * time.Hour, 1},
		{"exactly midnight starts the day", time.Date(2026, 6, 10, 0, 0, 0, 0, berlin), time.Date(2026, 6, 10, 0, 0, 0, 0, berlin), 24 * time.Hour, 10},
		{"last nanosecond ends the day", time.Date(2026, 6, 10, 23, 59, 59, 999999999, berlin), time.Date(2026, 6, 10, 0, 0, 0, 0, berlin), 24 * time.Hour, 10},
		{"berlin spring forward", time.Date(2026, 3, 29, 5, 0, 0, 0, berlin), time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), 23 * time.Hour, 29},
		{"year end", time.Date(2026, 12, 31, 18, 0, 0, 0, berlin), time.Date(2026, 12, 31, 0, 0, 0, 0, berlin), 24 * time.Hour, 31},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, e := DayBounds(c.at)
			if !s.Equal(c.start) || e.Sub(s) != c.length || s.Day() != c.startDay || e.Hour() != 0 || e.Minute() != 0 {
				t.Fatalf("DayBounds(%v) = [%v, %v) (%v), want start %v, length %v", c.at, s, e, e.Sub(s), c.start, c.length)
			}
			if c.at.Before(s) || !c.at.Before(e) {
				t.Fatalf("DayBounds(%v) = [%v, %v): does not contain the instant", c.at, s, e)
			}
		})
	}
}

// B1, B5, B7: only completed, counted turns count; a started turn without completion (a
// crash) does not; trusted (uncounted) completions do not; counts come from the chain.
func TestLedgerCounts(t *testing.T) {
	ctx := context.Background()
	l := testLedger(t)
	a, b := newAID(t), newAID(t)
	start, end := DayBounds(time.Now())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Started(ctx, a, "ix-1", map[string]any{"run": "r1"}))
	must(l.Completed(ctx, a, "ix-1", true, map[string]any{"run": "r1"}, nil))
	must(l.Started(ctx, a, "ix-2", map[string]any{"run": "r2"})) // B7: crashed, no completion
	must(l.Started(ctx, b, "ix-3", map[string]any{"run": "r3"}))
	must(l.Completed(ctx, b, "ix-3", false, map[string]any{"run": "r3"}, nil)) // trusted: not counted
	must(l.Started(ctx, b, "ix-4", map[string]any{"run": "r4"}))
	must(l.Completed(ctx, b, "ix-4", true, map[string]any{"run": "r4"}, nil))
	for _, c := range []struct {
		name     string
		peer     string
		from, to time.Time
		want     int
	}{
		{"all peers today", "", start, end, 2},
		{"peer a today", a, start, end, 1},
		{"peer b today", b, start, end, 1},
		{"yesterday", "", start.AddDate(0, 0, -1), start, 0},
		{"tomorrow", "", end, end.AddDate(0, 0, 1), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := l.Counted(ctx, c.peer, c.from, c.to)
			if err != nil || got != c.want {
				t.Fatalf("Counted(%s) = %d, %v, want %d", c.name, got, err, c.want)
			}
		})
	}
	// B5: the store reopened (a restarted daemon) rebuilds the same counts from the chain.
	path := l.Store.Path()
	must(l.Store.Close())
	st, err := store.Open(path)
	must(err)
	defer st.Close()
	again := Ledger{Store: st, Signer: l.Signer}
	if n, err := again.Counted(ctx, "", start, end); err != nil || n != 2 {
		t.Fatalf("Counted after reopening = %d, %v, want 2", n, err)
	}
	if n, err := st.Count(ctx, store.CountFilter{Kinds: []string{KindTurnCompleted}}); err != nil || n != 3 {
		t.Fatalf("turn_completed entries = %d, %v, want 3", n, err)
	}
}
