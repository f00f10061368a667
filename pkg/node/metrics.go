package node

import (
	"context"
	"net/http"

	"anet.dev/anet/pkg/metrics"
	"anet.dev/anet/pkg/privsep"
)

// initMetrics makes the node's series (pkg/metrics) and hooks the store's appends to them.
// It runs right after the store opens, so the chain's first entry of this start is counted;
// the budget and the helpers are read when a scrape comes, from whatever has started by then.
func (n *Node) initMetrics() {
	n.metrics = metrics.New(metrics.Options{Budget: n.metricsBudget, Helpers: n.metricsHelpers, Runtime: true, Log: n.log})
	n.store.SetOnAppend(n.metrics.EvidenceAppended)
}

// MetricsHandler serves the node's Prometheus series. It checks no credential: the dashboard
// listener mounts it behind metrics.Protect with dashboard.metrics_token_file.
func (n *Node) MetricsHandler() http.Handler { return n.metrics.Handler() }

// metricsBudget is the day's budget for a scrape; none without an auto-reply engine.
func (n *Node) metricsBudget(ctx context.Context) (*metrics.Budget, error) {
	if n.ar == nil {
		return nil, nil
	}
	return n.ar.budget(ctx)
}

// metricsHelpers is the helpers' supervision state for a scrape (C3, N2).
func (n *Node) metricsHelpers() []metrics.Helper {
	var out []metrics.Helper
	for _, s := range n.helpers() {
		if s == nil {
			continue
		}
		st := s.Status()
		out = append(out, metrics.Helper{Name: st.Name, Up: st.State == privsep.StateRunning, Restarts: st.Restarts, Unresponsive: st.UnresponsiveTotal})
	}
	return out
}
