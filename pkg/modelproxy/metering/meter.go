package metering

import (
	"sync"
	"time"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
)

// The spend codes live in pkg/reasons, where the daemon can branch on them without linking
// this package (K1, K2).
const (
	SpendLimit    = reasons.SpendLimit
	ModelUnpriced = reasons.ModelUnpriced
)

// bytesPerToken turns a body's size into the input-token estimate (K1).
const bytesPerToken = limits.EstimateBytesPerToken

// Meter keeps one run's spend (K1) and holds it to the run's allowance (K2): the cost of
// finished responses, and the worst cases reserved by the requests still in flight. A request
// is forwarded only if its worst case fits beside both, so concurrent requests cannot
// together pass the allowance; each settles on its actual usage when its response ends.
type Meter struct {
	model     string
	prices    *money.Prices // nil: the model is unpriced; tokens are still counted
	allowance *money.Micros // nil: no allowance (the run is not capped)

	mu        sync.Mutex // guards the fields that follow
	idle      *sync.Cond // signalled when inflight drops to 0
	spent     money.Micros
	reserved  money.Micros
	inflight  int64
	tokens    money.Tokens
	responses int64
	missing   int64
	// open are the reservations not yet settled; Finish charges them.
	open map[*Reservation]struct{}
	// finished: the run's spend is final; a request that settles later adds nothing.
	finished bool
}

// Reservation is one forwarded request's hold on the allowance, from Reserve to Settle.
type Reservation struct {
	worst money.Micros
	// charged: Finish charged it its worst case before it settled (guarded by the meter).
	charged bool
}

// Charge is what one request was metered (K1): its reported tokens and its cost, the
// estimate for a response that reported no usage.
type Charge struct {
	Tokens money.Tokens
	Cost   money.Micros
}

// New returns the meter of a run of model, at prices (nil: unpriced, tokens still counted),
// held to allowance (nil: none).
func New(model string, prices *money.Prices, allowance *money.Micros) *Meter {
	m := &Meter{model: model, prices: prices, allowance: allowance, open: map[*Reservation]struct{}{}}
	m.idle = sync.NewCond(&m.mu)
	return m
}

// WorstCase is what one request can cost at most: its body's input-token estimate at the
// highest input price plus its output bound at the output price.
func (m *Meter) WorstCase(bodyBytes int, maxOut int64) money.Micros {
	if m.prices == nil {
		return 0
	}
	in := (int64(bodyBytes) + bytesPerToken - 1) / bytesPerToken
	p := *m.prices
	p.Input, p.CacheWrite, p.CacheRead = p.MaxInput(), 0, 0
	return p.Cost(money.Tokens{Input: in, Output: maxOut})
}

// Reserve admits a request whose worst case fits in the allowance beside what is spent and
// reserved, and reserves it; otherwise it returns the refusal naming the figures. Each
// reservation is settled exactly once (Settle).
func (m *Meter) Reserve(worst money.Micros, bodyBytes int, maxOut int64) (*Reservation, *rules.Refusal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.allowance == nil || money.Add(money.Add(m.spent, m.reserved), worst) <= *m.allowance {
		m.reserved = money.Add(m.reserved, worst)
		m.inflight++
		r := &Reservation{worst: worst}
		m.open[r] = struct{}{}
		return r, nil
	}
	return nil, rules.Refuse(SpendLimit, "worst case %s = ~%d input + %d output tokens at %s prices; allowance %s, spent %s, in flight %s",
		worst, (bodyBytes+bytesPerToken-1)/bytesPerToken, maxOut, m.model, *m.allowance, m.spent, m.reserved)
}

// Outcome is what one forwarded request's response reported.
type Outcome struct {
	// billed: the upstream may charge for the request. False when the request never reached
	// it, or when it answered with an error status (errors are not billed).
	billed bool
	// final: the response reported its complete usage; tokens holds it. Otherwise tokens
	// holds what arrived before the response ended (the input of a cut stream, or nothing).
	final  bool
	tokens money.Tokens
}

// Settle releases a request's reservation and charges its response: the reported usage, or,
// when none arrived, the conservative estimate (its worst case) counted as usage missing. It
// returns what the request was charged, for its receipt: after Finish, what Finish charged it.
func (m *Meter) Settle(r *Reservation, o Outcome) Charge {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.open, r)
	if m.finished {
		if r.charged {
			return Charge{Cost: r.worst}
		}
		return Charge{}
	}
	worst := r.worst
	m.reserved -= worst
	if m.inflight--; m.inflight == 0 {
		m.idle.Broadcast()
	}
	if !o.billed {
		return Charge{}
	}
	var cost money.Micros
	if m.prices != nil {
		cost = m.prices.Cost(o.tokens)
	}
	if !o.final {
		m.missing++
		cost = max(cost, worst)
	}
	m.responses++
	m.tokens = m.tokens.Add(o.tokens)
	m.spent = money.Add(m.spent, cost)
	return Charge{Tokens: o.tokens, Cost: cost}
}

// Finish waits up to wait for the requests in flight to settle, then makes the spend final:
// a request still unsettled (its answer still streaming when the run ended) is charged its
// worst case and counted as usage missing.
func (m *Meter) Finish(wait time.Duration) {
	timer := time.AfterFunc(wait, func() {
		m.mu.Lock()
		m.finished = true
		m.idle.Broadcast()
		m.mu.Unlock()
	})
	defer timer.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.inflight > 0 && !m.finished {
		m.idle.Wait()
	}
	m.finished = true
	for r := range m.open {
		r.charged = true
	}
	if m.inflight > 0 {
		m.spent = money.Add(m.spent, m.reserved)
		m.missing += m.inflight
		m.responses += m.inflight
		m.reserved, m.inflight = 0, 0
	}
}

// Snapshot is the run's spend so far.
func (m *Meter) Snapshot() money.Spend {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := money.Spend{Model: m.model, Tokens: m.tokens, Cost: m.spent, Responses: m.responses, UsageMissing: m.missing}
	if m.prices != nil {
		p := *m.prices
		s.Prices = &p
	}
	if m.allowance != nil {
		a := *m.allowance
		s.Allowance = &a
	}
	return s
}
