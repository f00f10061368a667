package autoreply

import (
	"encoding/json"
	"time"
)

// Observer hears how turns end and what their runs met, for the node's metrics (B1, F1, K1).
// Its methods run on the turn's path: they must be cheap and must not block. A nil Observer
// in the options hears nothing.
type Observer interface {
	// RunEnded: a turn on route ended with outcome (one of the Outcome constants); d is
	// its wall time when something ran (a program or a model call), zero when nothing did.
	RunEnded(route, outcome string, d time.Duration)
	// RunRefused: the run's endpoint or egress proxy refused n of its requests with code.
	RunRefused(code string, n int64)
	// ObserveModelRequest: one of the run's model requests took d, from its receipt.
	ObserveModelRequest(d time.Duration)
}

// How a turn ended, as an Observer hears it.
const (
	// OutcomeAnswered: the requester got an answer.
	OutcomeAnswered = "answered"
	// OutcomeFailed: something ran and the requester got a refusal (turn_failed, …).
	OutcomeFailed = "failed"
	// OutcomeRefused: refused before anything ran (budget, sandbox_unavailable, …).
	OutcomeRefused = "refused"
	// OutcomeHeld: nothing ran and nobody was told; the task stays in the inbox.
	OutcomeHeld = "held"
	// OutcomeInterrupted: anetd stopped during the turn; the task runs again after a restart.
	OutcomeInterrupted = "interrupted"
)

// ended tells the observer that a turn on route ended; began is when it started running, or
// zero when nothing ran.
func (e *Engine) ended(route Route, outcome string, began time.Time) {
	if e.o.Observer == nil {
		return
	}
	var d time.Duration
	if !began.IsZero() {
		d = time.Since(began)
	}
	e.o.Observer.RunEnded(string(route), outcome, d)
}

// codeCount is how many of a run's requests were refused with one code.
type codeCount struct {
	code string
	n    int64
}

// usageRefusals reads the refusals out of an endpoint's usage report (anet-egress writes
// it): the endpoint's own, its model proxy's and its egress tunnel's, each count above zero.
// A report that does not parse has none.
func usageRefusals(raw json.RawMessage) []codeCount {
	if len(raw) == 0 {
		return nil
	}
	type refusals struct {
		Refusals map[string]int64 `json:"refusals"`
	}
	var u struct {
		refusals
		Model  refusals `json:"model"`
		Tunnel refusals `json:"tunnel"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return nil
	}
	var out []codeCount
	for _, m := range []map[string]int64{u.Refusals, u.Model.Refusals, u.Tunnel.Refusals} {
		for code, n := range m {
			if n > 0 {
				out = append(out, codeCount{code, n})
			}
		}
	}
	return out
}

// noteRunRefusals tells the observer what the run's endpoint refused (K1: the usage the run
// reported when its endpoint closed).
func (e *Engine) noteRunRefusals(usage json.RawMessage) {
	if e.o.Observer == nil {
		return
	}
	for _, c := range usageRefusals(usage) {
		e.o.Observer.RunRefused(c.code, c.n)
	}
}

// noteModelRequests tells the observer how long each of the run's model requests took, from
// the receipts its endpoint reported (K1).
func (e *Engine) noteModelRequests(rc *RunReceipts) {
	if e.o.Observer == nil || rc == nil {
		return
	}
	for _, m := range rc.Set.Model {
		e.o.Observer.ObserveModelRequest(m.Ended.Sub(m.Started))
	}
}
