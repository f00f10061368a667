// Package metrics is anetd's Prometheus series (B1, B6, K1, K2, N1, N2, C3, F1): how turns
// end and how long they take, the refusals the node sends and the ones its runs met, the
// day's run budget and spend, the helpers' health, what intake admits and turns away, and
// what the evidence chain records.
//
// The series live on a registry of their own (never the process-wide default one, so that
// nothing a library registers is exposed by accident) and are served by Handler. Events are
// methods on *Metrics; a nil *Metrics takes every call and does nothing, so code paths
// without metrics need no checks. What is a state rather than an event (the budget, the
// helpers) is read through callbacks when a scrape comes, never polled.
//
// The packages that produce events do not import this one: they declare the few methods
// they call as an interface (pkg/autoreply, pkg/peer) or a func field (pkg/store), and the
// node hands them its *Metrics.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure New. Every field may be zero.
type Options struct {
	// Budget reads the day's run budget and spend when a scrape comes; nil, or a nil
	// *Budget from it, exports no budget series (no auto-reply engine in the build).
	Budget func(ctx context.Context) (*Budget, error)
	// Helpers reads the helpers' supervision state when a scrape comes; nil exports none.
	Helpers func() []Helper
	// Runtime adds the Go runtime's and the process's own series (go_*, process_*): both
	// are read from runtime/metrics and /proc at scrape time, with no stop-the-world.
	Runtime bool
	// Log receives what goes wrong while serving a scrape; nil is slog.Default().
	Log *slog.Logger
}

// Metrics holds the registry and every series of the node.
type Metrics struct {
	reg *prometheus.Registry
	log *slog.Logger

	runs          *prometheus.CounterVec
	runDuration   *prometheus.HistogramVec
	modelRequests prometheus.Histogram
	refusals      *prometheus.CounterVec
	admitted      *prometheus.CounterVec
	turnedAway    *prometheus.CounterVec
	appends       *prometheus.CounterVec

	values *labelValues
}

// Where a refusal went: to a requesting peer, or to a run from its endpoint or egress proxy.
const (
	RefusedToPeer = "peer"
	RefusedToRun  = "run"
)

// Buckets of the duration histograms, in seconds. A turn runs an agent from a cold sandbox
// start to its time limit (minutes); a model request answers in a fraction of a second to
// a few minutes of streamed output.
var (
	runBuckets          = []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200}
	modelRequestBuckets = []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}
)

// New builds the node's series on a registry of their own.
func New(o Options) *Metrics {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		log: log,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anet_runs_total",
			Help: "Turns ended, by route (sandbox, direct, openai, refuse) and outcome (answered; failed: it ran and gave no answer; refused: refused before anything ran; held: left in the inbox; interrupted: ended by a shutdown)."},
			[]string{"route", "outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "anet_run_duration_seconds",
			Help: "Wall time of turns that ran a program or a model call (answered, failed), from the turn's start to its end, by route.", Buckets: runBuckets},
			[]string{"route"}),
		modelRequests: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "anet_model_request_duration_seconds",
			Help: "Wall time of each model request of a run, from its receipt's start to its end (K1).", Buckets: modelRequestBuckets}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anet_refusals_total",
			Help: "Refusals by reason code: to=\"peer\" for each refusal sent to a requesting peer (F1, B4, K2), to=\"run\" for each request a run's endpoint or egress proxy refused."},
			[]string{"to", "code"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anet_intake_admitted_total",
			Help: "Peer messages intake stored, by the sender's class (stranger, known, trusted) (N1)."},
			[]string{"class"}),
		turnedAway: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anet_intake_turned_away_total",
			Help: "Peer messages refused and connections turned away or closed early, by the sender's class (unauthenticated before the handshake) and the reason code or admission reason (N1)."},
			[]string{"class", "code"}),
		appends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anet_evidence_appends_total",
			Help: "Entries appended to the evidence chain, by kind."},
			[]string{"kind"}),
		values: newLabelValues(),
	}
	m.reg.MustRegister(m.runs, m.runDuration, m.modelRequests, m.refusals, m.admitted, m.turnedAway, m.appends)
	if o.Budget != nil {
		m.reg.MustRegister(&budgetCollector{read: o.Budget})
	}
	if o.Helpers != nil {
		m.reg.MustRegister(&helperCollector{read: o.Helpers})
	}
	if o.Runtime {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Handler serves the series in the Prometheus text exposition format (or OpenMetrics, when
// the scraper asks for it). It checks no credential: wrap it with Protect.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog: errorLog{m.log},
		// A callback that fails (the store is busy) costs its own series, not the scrape.
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
		// A scraper that stalls must not hold a goroutine for ever, nor many scrapers at once
		// the store (each scrape reads the day's budget from it).
		Timeout:             10 * time.Second,
		MaxRequestsInFlight: 4,
	})
}

// errorLog is promhttp's error log on slog.
type errorLog struct{ log *slog.Logger }

func (e errorLog) Println(v ...any) {
	e.log.Warn("metrics scrape", "err", slog.AnyValue(v).String())
}

// RunEnded counts a turn that ended with outcome on route (pkg/autoreply's Outcome
// constants); d is its wall time when something ran, observed when above zero.
func (m *Metrics) RunEnded(route, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	route = m.values.of("route", route)
	m.runs.WithLabelValues(route, m.values.of("outcome", outcome)).Inc()
	if d > 0 {
		m.runDuration.WithLabelValues(route).Observe(d.Seconds())
	}
}

// Refused counts a refusal sent to a requesting peer with code.
func (m *Metrics) Refused(code string) {
	if m == nil {
		return
	}
	m.refusals.WithLabelValues(RefusedToPeer, m.values.of("code", code)).Inc()
}

// RunRefused counts n requests of a run that its endpoint or egress proxy refused with code.
func (m *Metrics) RunRefused(code string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.refusals.WithLabelValues(RefusedToRun, m.values.of("code", code)).Add(float64(n))
}

// ObserveModelRequest records the wall time of one model request of a run.
func (m *Metrics) ObserveModelRequest(d time.Duration) {
	if m == nil || d < 0 {
		return
	}
	m.modelRequests.Observe(d.Seconds())
}

// IntakeAdmitted counts a peer message intake stored, from a sender of class.
func (m *Metrics) IntakeAdmitted(class string) {
	if m == nil {
		return
	}
	m.admitted.WithLabelValues(m.values.of("class", class)).Inc()
}

// IntakeTurnedAway counts a message refused or a connection turned away, from a sender of
// class ("unauthenticated" before the handshake), for code.
func (m *Metrics) IntakeTurnedAway(class, code string) {
	if m == nil {
		return
	}
	m.turnedAway.WithLabelValues(m.values.of("class", class), m.values.of("code", code)).Inc()
}

// EvidenceAppended counts an entry of kind committed to the evidence chain.
func (m *Metrics) EvidenceAppended(kind string) {
	if m == nil {
		return
	}
	m.appends.WithLabelValues(m.values.of("kind", kind)).Inc()
}
