package modelproxy

import (
	"fmt"
	"sync"
	"sync/atomic"

	"anet.dev/anet/pkg/reasons"
)

// Limits bound one run's model traffic (R1). They are plain data so that anetd can send them
// with the run's policy.
type Limits struct {
	Requests   int64 `json:"requests"`
	BodyBytes  int64 `json:"body_bytes"`
	TotalBytes int64 `json:"total_bytes"`
}

// DefaultLimits are R1's figures: 60 model requests, 8 MiB per body, 16 MiB in all.
func DefaultLimits() Limits {
	return Limits{Requests: 60, BodyBytes: 8 << 20, TotalBytes: 16 << 20}
}

// check refuses negative limits and limits above R1's.
func (l Limits) check() error {
	d := DefaultLimits()
	for _, c := range []struct {
		name     string
		got, max int64
	}{{"requests", l.Requests, d.Requests}, {"body_bytes", l.BodyBytes, d.BodyBytes}, {"total_bytes", l.TotalBytes, d.TotalBytes}} {
		if c.got < 0 || c.got > c.max {
			return fmt.Errorf("limits.%s = %d: must be between 0 (default) and %d (R1)", c.name, c.got, c.max)
		}
	}
	return nil
}

// withDefaults fills unset (zero) limits; a limit can be lowered, never switched off.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Requests <= 0 {
		l.Requests = d.Requests
	}
	if l.BodyBytes <= 0 {
		l.BodyBytes = d.BodyBytes
	}
	if l.TotalBytes <= 0 {
		l.TotalBytes = d.TotalBytes
	}
	return l
}

// Usage is what a run's model traffic used; reported to anetd when the run ends.
type Usage struct {
	// Requests counts authenticated requests to forwarding endpoints (the R1 counter).
	Requests int64 `json:"requests"`
	// Forwarded counts requests that reached the upstream.
	Forwarded int64 `json:"forwarded"`
	// LocalAnswers counts requests answered by the node (models list).
	LocalAnswers int64 `json:"local_answers"`
	// BytesFromAgent counts accepted request body bytes (the R1 total).
	BytesFromAgent int64 `json:"bytes_from_agent"`
	// BytesUpstream counts rewritten body bytes sent upstream.
	BytesUpstream int64 `json:"bytes_upstream"`
	// BytesToAgent counts response body bytes sent back to the agent.
	BytesToAgent int64                  `json:"bytes_to_agent"`
	Refusals     map[reasons.Code]int64 `json:"refusals"`
}

type counters struct {
	requests, forwarded, local, fromAgent, upstream, toAgent atomic.Int64

	mu       sync.Mutex // guards refusals
	refusals map[reasons.Code]int64
}

func (c *counters) refused(code reasons.Code) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refusals == nil {
		c.refusals = map[reasons.Code]int64{}
	}
	c.refusals[code]++
}

func (c *counters) snapshot() Usage {
	c.mu.Lock()
	r := make(map[reasons.Code]int64, len(c.refusals))
	for k, v := range c.refusals {
		r[k] = v
	}
	c.mu.Unlock()
	return Usage{
		Requests: c.requests.Load(), Forwarded: c.forwarded.Load(), LocalAnswers: c.local.Load(),
		BytesFromAgent: c.fromAgent.Load(), BytesUpstream: c.upstream.Load(),
		BytesToAgent: c.toAgent.Load(), Refusals: r,
	}
}

// takeRequest reserves one of the run's requests; false once the limit is reached.
func (c *counters) takeRequest(max int64) bool {
	for {
		n := c.requests.Load()
		if n >= max {
			return false
		}
		if c.requests.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// takeBytes adds n accepted body bytes; false (and nothing added) if that passes max.
func (c *counters) takeBytes(n, max int64) bool {
	for {
		cur := c.fromAgent.Load()
		if cur+n > max {
			return false
		}
		if c.fromAgent.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}
