package autoreply

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/money"
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
	// HoldSpend: a spend cap is 0; held like Hold (K2).
	HoldSpend
)

func (v Verdict) String() string {
	return [...]string{"admitted", "wait", "hold", "spent", "hold_spend"}[v]
}

// Limits is the budget configuration (B2, K2).
type Limits struct {
	PerDay, PerPeer int
	// Spend caps the money as well; nil caps runs only.
	Spend *SpendCaps
}

// SpendCaps are the day's spend caps for untrusted runs, all peers and each peer (K2).
type SpendCaps struct {
	PerDay, PerPeer money.Micros
}

// Counter counts the runs counted in [from, to) and what they cost, for one peer or, with
// "", for all.
type Counter interface {
	Counted(ctx context.Context, peer string, from, to time.Time) (int, error)
	Spent(ctx context.Context, peer string, from, to time.Time) (money.Micros, error)
}

// Scheduler admits untrusted turns: budget first (B2–B5), then a slot (B6). One mutex
// covers both so two tasks cannot both take the last run of the day.
type Scheduler struct {
	counter Counter
	now     func() time.Time

	mu      sync.Mutex // guards the fields that follow
	limits  Limits     // changed by a reload (U3); runs already admitted keep their tickets
	active  map[string]int
	total   int
	changed chan struct{} // closed and replaced when a run ends
	// The allowances of the runs in flight, which count as spent until they end (K2).
	reserved     money.Micros
	reservedPeer map[string]money.Micros
}

// NewScheduler returns a scheduler over counter's counted runs. now nil is time.Now.
func NewScheduler(l Limits, counter Counter, now func() time.Time) *Scheduler {
	if now == nil {
		now = time.Now
	}
	return &Scheduler{limits: l, counter: counter, now: now, active: map[string]int{}, reservedPeer: map[string]money.Micros{}, changed: make(chan struct{})}
}

// Ticket is an admitted run; Release it exactly once when the run has ended and its
// completion (counted or not) is in the chain.
type Ticket struct {
	s    *Scheduler
	peer string
	once sync.Once
	// allowance is what the run may spend (K2); nil without spend caps.
	allowance *money.Micros
}

// Allowance is what the run may spend on the model: what was left of the day's and the
// peer's caps, beside the other runs in flight, when it was admitted (K2). nil: no caps.
func (t *Ticket) Allowance() *money.Micros {
	if t == nil || t.allowance == nil {
		return nil
	}
	a := *t.allowance
	return &a
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
		if t.allowance != nil {
			s.reserved -= *t.allowance
			if s.reservedPeer[t.peer] -= *t.allowance; s.reservedPeer[t.peer] <= 0 {
				delete(s.reservedPeer, t.peer)
			}
		}
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	})
}

// SetLimits changes the budget for the tasks admitted from now on (a reload, U3).
func (s *Scheduler) SetLimits(l Limits) {
	s.mu.Lock()
	s.limits = l
	close(s.changed) // waiting tasks look again under the new limits
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Changed returns a channel closed when a run ends.
func (s *Scheduler) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Admit decides for one untrusted task of peer. until is the day's end for Spent. Runs and
// money are checked alike (B2–B5, K2): spent today (from the chain) at or over a cap refuses;
// spent plus in flight at a cap waits, since runs in flight may yet end uncounted or cheaper.
func (s *Scheduler) Admit(ctx context.Context, peer string) (*Ticket, Verdict, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limits.PerDay <= 0 || s.limits.PerPeer <= 0 {
		return nil, Hold, time.Time{}, nil
	}
	caps := s.limits.Spend
	if caps != nil && (caps.PerDay <= 0 || caps.PerPeer <= 0) {
		return nil, HoldSpend, time.Time{}, nil
	}
	start, end := DayBounds(s.now())
	all, err := s.counter.Counted(ctx, "", start, end)
	if err != nil {
		return nil, Wait, time.Time{}, fmt.Errorf("budget: %w", err)
	}
	mine, err := s.counter.Counted(ctx, peer, start, end)
	if err != nil {
		return nil, Wait, time.Time{}, fmt.Errorf("budget: %w", err)
	}
	var leftAll, leftMine money.Micros
	if caps != nil {
		spentAll, err := s.counter.Spent(ctx, "", start, end)
		if err != nil {
			return nil, Wait, time.Time{}, fmt.Errorf("budget: %w", err)
		}
		spentMine, err := s.counter.Spent(ctx, peer, start, end)
		if err != nil {
			return nil, Wait, time.Time{}, fmt.Errorf("budget: %w", err)
		}
		if spentAll >= caps.PerDay || spentMine >= caps.PerPeer {
			return nil, Spent, end, nil
		}
		leftAll = caps.PerDay - spentAll - s.reserved
		leftMine = caps.PerPeer - spentMine - s.reservedPeer[peer]
	}
	if all >= s.limits.PerDay || mine >= s.limits.PerPeer {
		return nil, Spent, end, nil
	}
	if all+s.total >= s.limits.PerDay || mine+s.active[peer] >= s.limits.PerPeer {
		return nil, Wait, time.Time{}, nil
	}
	if caps != nil && (leftAll <= 0 || leftMine <= 0) {
		return nil, Wait, time.Time{}, nil
	}
	if s.total >= MaxUntrustedRuns || s.active[peer] >= MaxRunsPerPeer {
		return nil, Wait, time.Time{}, nil
	}
	s.total++
	s.active[peer]++
	tk := &Ticket{s: s, peer: peer}
	if caps != nil {
		a := min(leftAll, leftMine)
		tk.allowance = &a
		s.reserved += a
		s.reservedPeer[peer] += a
	}
	return tk, Admitted, time.Time{}, nil
}

// Usage is the budget as status shows it.
type Usage struct {
	RunsToday int
	InFlight  int
	Left      int
	DayStart  time.Time
	DayEnds   time.Time
	Limits    Limits
	// Spend is today's money, with Limits.Spend (K2); zero without spend caps.
	Spend SpendUsage
}

// SpendUsage is today's spend of untrusted runs: counted runs' cost from the chain, the
// allowances of runs in flight, and what is left (in-flight allowances count as spent).
type SpendUsage struct {
	Spent    money.Micros
	InFlight money.Micros
	Left     money.Micros
	// Peers lists each peer that spent today or has a run in flight.
	Peers []PeerSpend
}

// PeerSpend is one peer's spend today against the per-peer cap.
type PeerSpend struct {
	Peer     string
	Spent    money.Micros
	InFlight money.Micros
	Left     money.Micros
}

// Usage reads today's counts. Left counts runs in flight as used.
func (s *Scheduler) Usage(ctx context.Context) (Usage, error) {
	start, end := DayBounds(s.now())
	n, err := s.counter.Counted(ctx, "", start, end)
	if err != nil {
		return Usage{}, err
	}
	s.mu.Lock()
	limits := s.limits
	s.mu.Unlock()
	var byPeer map[string]money.Micros
	if ps, ok := s.counter.(interface {
		SpentByPeer(ctx context.Context, from, to time.Time) (map[string]money.Micros, error)
	}); ok && limits.Spend != nil {
		if byPeer, err = ps.SpentByPeer(ctx, start, end); err != nil {
			return Usage{}, err
		}
	}
	s.mu.Lock()
	inflight := s.total
	reserved := s.reserved
	reservedPeer := maps.Clone(s.reservedPeer)
	s.mu.Unlock()
	left := limits.PerDay - n - inflight
	if left < 0 {
		left = 0
	}
	u := Usage{RunsToday: n, InFlight: inflight, Left: left, DayStart: start, DayEnds: end, Limits: limits}
	if caps := limits.Spend; caps != nil {
		u.Spend = spendUsage(*caps, byPeer, reserved, reservedPeer)
	}
	return u, nil
}

func spendUsage(caps SpendCaps, spent map[string]money.Micros, reserved money.Micros, reservedPeer map[string]money.Micros) SpendUsage {
	var su SpendUsage
	for _, v := range spent {
		su.Spent += v
	}
	su.InFlight = reserved
	su.Left = max(0, caps.PerDay-su.Spent-reserved)
	peers := map[string]bool{}
	for p := range spent {
		peers[p] = true
	}
	for p := range reservedPeer {
		peers[p] = true
	}
	for _, p := range slices.Sorted(maps.Keys(peers)) {
		ps := PeerSpend{Peer: p, Spent: spent[p], InFlight: reservedPeer[p]}
		ps.Left = max(0, min(caps.PerPeer-ps.Spent-ps.InFlight, su.Left))
		su.Peers = append(su.Peers, ps)
	}
	return su
}
