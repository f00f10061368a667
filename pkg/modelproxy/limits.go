package modelproxy

import (
	"sync"
	"sync/atomic"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
)

// Limits bound one run's model traffic (R1): the one type anetd sends in the run's policy and
// the proxy enforces.
type Limits = limits.Model

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
	// Spend is the run's metered tokens and cost (K1).
	Spend money.Spend `json:"spend"`
	// Upstream is what the model service answered (statuses, failures).
	Upstream UpstreamStats `json:"upstream"`
	// Receipts are the run's requests that carried its token, in the order they ended, and
	// DroppedReceipts how many passed receipt.MaxPerKind (pkg/endpoint moves both into the
	// run's receipt set).
	Receipts        []receipt.Model `json:"receipts,omitempty"`
	DroppedReceipts int             `json:"dropped_receipts,omitempty"`
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
