package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Budget is the day's run budget and spend of untrusted turns (B1, B2, B6, K2), as the
// scheduler reports it; every sum of money is in whole millionths of the currency.
type Budget struct {
	// RunsToday are the runs counted today; RunsInFlight the untrusted runs now running;
	// RunsLeft what the day allows beside both; RunsPerDay the cap.
	RunsToday, RunsInFlight, RunsLeft, RunsPerDay int
	// Spend is nil without spend caps.
	Spend *Spend
}

// Spend is today's money of untrusted runs against the caps (K2).
type Spend struct {
	// Spent is what counted runs cost (from the evidence chain); InFlight the allowances of
	// the runs in flight; Left what a run admitted now could get, in-flight allowances
	// counted as spent.
	Spent, InFlight, Left int64
	PerDay, PerPeer       int64
	// Peers lists each peer that spent today or has a run in flight.
	Peers []PeerSpend
}

// PeerSpend is one peer's spend today against the per-peer cap.
type PeerSpend struct {
	Peer                  string
	Spent, InFlight, Left int64
}

// budgetReadTimeout bounds the store queries of one scrape.
const budgetReadTimeout = 5 * time.Second

var (
	descRunsToday    = prometheus.NewDesc("anet_runs_counted_today", "Untrusted runs counted against today's budget (B1).", nil, nil)
	descRunsInFlight = prometheus.NewDesc("anet_runs_in_flight", "Untrusted runs running now; at most two at a time (B6).", nil, nil)
	descRunsLeft     = prometheus.NewDesc("anet_runs_left_today", "Untrusted runs today's budget still allows, runs in flight counted as used (B2).", nil, nil)
	descRunsPerDay   = prometheus.NewDesc("anet_runs_per_day", "The day's run budget of untrusted turns, auto_reply.sandbox.runs_per_day (B2).", nil, nil)
	descSpent        = prometheus.NewDesc("anet_spend_micros_today", "What untrusted runs counted today cost, in millionths of the currency (K1, K2).", nil, nil)
	descInFlight     = prometheus.NewDesc("anet_spend_in_flight_micros", "The allowances of the untrusted runs in flight, which count as spent until they end (K2).", nil, nil)
	descAllowance    = prometheus.NewDesc("anet_allowance_micros_today", "What is left of today's spend cap for untrusted runs, in-flight allowances counted as spent (K2).", nil, nil)
	descCap          = prometheus.NewDesc("anet_spend_cap_micros", "The spend caps of untrusted runs: cap=\"day\" all peers, cap=\"peer\" each peer (K2).", []string{"cap"}, nil)
	descPeerSpent    = prometheus.NewDesc("anet_peer_spend_micros_today", "What one peer's counted runs cost today (K2).", []string{"peer"}, nil)
	descPeerInFlight = prometheus.NewDesc("anet_peer_spend_in_flight_micros", "The allowances of one peer's runs in flight (K2).", []string{"peer"}, nil)
	descPeerLeft     = prometheus.NewDesc("anet_peer_allowance_micros_today", "What a run of this peer admitted now could spend: the least of what is left of both caps (K2).", []string{"peer"}, nil)
)

// budgetCollector reads the budget when a scrape comes.
type budgetCollector struct {
	read func(ctx context.Context) (*Budget, error)
}

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunsToday, descRunsInFlight, descRunsLeft, descRunsPerDay, descSpent, descInFlight, descAllowance, descCap, descPeerSpent, descPeerInFlight, descPeerLeft} {
		ch <- d
	}
}

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), budgetReadTimeout)
	defer cancel()
	b, err := c.read(ctx)
	if err != nil {
		// The scrape still serves every other series; promhttp logs the error.
		ch <- prometheus.NewInvalidMetric(descRunsToday, err)
		return
	}
	if b == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descRunsToday, float64(b.RunsToday))
	gauge(descRunsInFlight, float64(b.RunsInFlight))
	gauge(descRunsLeft, float64(b.RunsLeft))
	gauge(descRunsPerDay, float64(b.RunsPerDay))
	s := b.Spend
	if s == nil {
		return
	}
	gauge(descSpent, float64(s.Spent))
	gauge(descInFlight, float64(s.InFlight))
	gauge(descAllowance, float64(s.Left))
	gauge(descCap, float64(s.PerDay), "day")
	gauge(descCap, float64(s.PerPeer), "peer")
	for _, p := range s.Peers {
		gauge(descPeerSpent, float64(p.Spent), p.Peer)
		gauge(descPeerInFlight, float64(p.InFlight), p.Peer)
		gauge(descPeerLeft, float64(p.Left), p.Peer)
	}
}
