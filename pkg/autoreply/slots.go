package autoreply

import (
	"context"
	"fmt"
	"sync"
	"time"

	"anet.dev/anet/pkg/limits"
)

// Per-run slot limits (B6).
const (
	MaxUntrustedRuns = limits.UntrustedRuns
	MaxRunsPerPeer   = limits.RunsPerPeer
)

// Verdict is the scheduler's answer for one untrusted task.
type Verdict int

const (
	// Admitted: the task holds a slot and its run is in flight for the budget.
	Admitted Verdict = iota
	// Wait: no slot now (or the budget is full only because of runs in flight); try again
	// at the next scan or when a run ends. Not a refusal (B6).
	Wait
	// Hold: the budget is 0; the task stays in the inbox and nobody is told (B3).
	Hold
	// Spent: the day's budget is used up; refuse with budget until the day ends (B4).
	Spent
)

func (v Verdict) String() string {
	return [...]string{"admitted", "wait", "hold", "spent"}[v]
}

// Limits is the budget configuration (B2).
type Limits struct {
	PerDay, PerPeer int
}

// Counter counts the runs counted in [from, to), for one peer or, with "", for all.
type Counter interface {
	Counted(ctx context.Context, peer string, from, to time.Time) (int, error)
}

// Scheduler admits untrusted turns: budget first (B2–B5), then a slot (B6). One mutex
// covers both so two tasks cannot both take the last run of the day.
type Scheduler struct {
	limits  Limits
	counter Counter
	now     func() time.Time

	mu      sync.Mutex // guards the fields that follow
	active  map[string]int
	total   int
	changed chan struct{} // closed and replaced when a run ends
}

// NewScheduler returns a scheduler over counter's counted runs. now nil is time.Now.
func NewScheduler(l Limits, counter Counter, now func() time.Time) *Scheduler {
	if now == nil {
		now = time.Now
	}
	return &Scheduler{limits: l, counter: counter, now: now, active: map[string]int{}, changed: make(chan struct{})}
}

// Ticket is an admitted run; Release it exactly once when the run has ended and its
// completion (counted or not) is in the chain.
type Ticket struct {
	s    *Scheduler
	peer string
	once sync.Once
}

// Release frees the slot and wakes waiting tasks.
func (t *Ticket) Release() {
	t.once.Do(func() {
		s := t.s
		s.mu.Lock()
		s.total--
		if s.active[t.peer]--; s.active[t.peer] <= 0 {
			delete(s.active, t.peer)
		}
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	})
}

// Changed returns a channel closed when a run ends.
func (s *Scheduler) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Admit decides for one untrusted task of peer. until is the day's end for Spent.
func (s *Scheduler) Admit(ctx context.Context, peer string) (*Ticket, Verdict, time.Time, error) {
	if s.limits.PerDay <= 0 || s.limits.PerPeer <= 0 {
		return nil, Hold, time.Time{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start, end := DayBounds(s.now())
	all, err := s.counter.Counted(ctx, "", start, end)
	if err != nil {
		return nil, Wait, time.Time{}, fmt.Errorf("budget: %w", err)
	}
	mine, err := s.counter.Counted(ctx, peer, start, end)
	if err != nil {
		return nil, Wait, time.Time{}, fmt.Errorf("budget: %w", err)
	}
	if all >= s.limits.PerDay || mine >= s.limits.PerPeer {
		return nil, Spent, end, nil
	}
	if all+s.total >= s.limits.PerDay || mine+s.active[peer] >= s.limits.PerPeer {
		return nil, Wait, time.Time{}, nil
	}
	if s.total >= MaxUntrustedRuns || s.active[peer] >= MaxRunsPerPeer {
		return nil, Wait, time.Time{}, nil
	}
	s.total++
	s.active[peer]++
	return &Ticket{s: s, peer: peer}, Admitted, time.Time{}, nil
}

// Usage is the budget as status shows it.
type Usage struct {
	RunsToday int
	InFlight  int
	Left      int
	DayStart  time.Time
	DayEnds   time.Time
	Limits    Limits
}

// Usage reads today's counts. Left counts runs in flight as used.
func (s *Scheduler) Usage(ctx context.Context) (Usage, error) {
	start, end := DayBounds(s.now())
	n, err := s.counter.Counted(ctx, "", start, end)
	if err != nil {
		return Usage{}, err
	}
	s.mu.Lock()
	inflight := s.total
	s.mu.Unlock()
	left := s.limits.PerDay - n - inflight
	if left < 0 {
		left = 0
	}
	return Usage{RunsToday: n, InFlight: inflight, Left: left, DayStart: start, DayEnds: end, Limits: s.limits}, nil
}
