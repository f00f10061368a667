package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Helper is one supervised helper (anet-sandboxd, anet-egress) as its supervisor reports it
// (C3, N2).
type Helper struct {
	Name string
	// Up: the helper runs and answers; starting, down and unresponsive helpers are not up
	// (runs that need them fail closed).
	Up bool
	// Restarts counts the times it died or was killed and started again.
	Restarts int
	// Unresponsive is the time it spent running but silent, over the node's life,
	// the current spell included.
	Unresponsive time.Duration
}

var (
	descHelperUp           = prometheus.NewDesc("anet_helper_up", "1 while the helper runs and answers its pings, 0 while it starts, is down or is unresponsive (C3, N2).", []string{"helper"}, nil)
	descHelperRestarts     = prometheus.NewDesc("anet_helper_restarts_total", "Times the helper died or was killed as unresponsive and was started again (N2).", []string{"helper"}, nil)
	descHelperUnresponsive = prometheus.NewDesc("anet_helper_unresponsive_seconds_total", "Seconds the helper spent running but not answering, treated as down (N2).", []string{"helper"}, nil)
)

// helperCollector reads the supervisors when a scrape comes.
type helperCollector struct{ read func() []Helper }

func (c *helperCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHelperUp
	ch <- descHelperRestarts
	ch <- descHelperUnresponsive
}

func (c *helperCollector) Collect(ch chan<- prometheus.Metric) {
	for _, h := range c.read() {
		up := 0.0
		if h.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descHelperUp, prometheus.GaugeValue, up, h.Name)
		ch <- prometheus.MustNewConstMetric(descHelperRestarts, prometheus.CounterValue, float64(h.Restarts), h.Name)
		ch <- prometheus.MustNewConstMetric(descHelperUnresponsive, prometheus.CounterValue, h.Unresponsive.Seconds(), h.Name)
	}
}
