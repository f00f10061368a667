package metrics

import (
	"anet.dev/anet/internal/testkit"

	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs h as a Prometheus server asking for the text format would and parses what it
// serves; a scrape that is not a 200 of parseable text fails the test.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape: Content-Type %q, want the text exposition", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("scrape: parse the exposition: %v", err)
	}
	return fams
}

// sample returns the value of name's series with exactly labels (a histogram's count), and
// whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range f.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		match := true
		for _, l := range m.Label {
			if want[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func wantSample(t *testing.T, fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	got, ok := sample(fams, name, labels...)
	if !ok {
		t.Errorf("%s%v: no such series", name, labels)
		return
	}
	if got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// Each event method moves its series, and the scrape shows it in the text format with the
// labels the README documents.
func TestEventsShowInTheScrape(t *testing.T) {
	m := New(Options{})
	m.RunEnded("sandbox", "answered", 3*time.Second)
	m.RunEnded("sandbox", "answered", 90*time.Second)
	m.RunEnded("openai", "failed", time.Second)
	m.RunEnded("sandbox", "refused", 0)
	m.Refused("budget")
	m.Refused("budget")
	m.RunRefused("spend_limit", 3)
	m.RunRefused("host_not_allowed", 0) // nothing refused: no series
	m.ObserveModelRequest(1500 * time.Millisecond)
	m.IntakeAdmitted("stranger")
	m.IntakeTurnedAway("stranger", "rate_limited")
	m.IntakeTurnedAway(Unauthenticated, "source_rate")
	m.EvidenceAppended("task_received")
	m.EvidenceAppended("task_received")

	f := scrape(t, m.Handler())
	wantSample(t, f, 2, "anet_runs_total", "route", "sandbox", "outcome", "answered")
	wantSample(t, f, 1, "anet_runs_total", "route", "openai", "outcome", "failed")
	wantSample(t, f, 1, "anet_runs_total", "route", "sandbox", "outcome", "refused")
	// Only turns that ran are timed: two answered sandbox turns, not the refused one.
	wantSample(t, f, 2, "anet_run_duration_seconds", "route", "sandbox")
	if h := histogram(f, "anet_run_duration_seconds", "sandbox"); h.GetSampleSum() != 93 {
		t.Errorf("sandbox run duration sum = %v, want 93", h.GetSampleSum())
	}
	wantSample(t, f, 2, "anet_refusals_total", "to", "peer", "code", "budget")
	wantSample(t, f, 3, "anet_refusals_total", "to", "run", "code", "spend_limit")
	if _, ok := sample(f, "anet_refusals_total", "to", "run", "code", "host_not_allowed"); ok {
		t.Error("a run refusal counted 0 times made a series")
	}
	wantSample(t, f, 1, "anet_model_request_duration_seconds")
	wantSample(t, f, 1, "anet_intake_admitted_total", "class", "stranger")
	wantSample(t, f, 1, "anet_intake_turned_away_total", "class", "stranger", "code", "rate_limited")
	wantSample(t, f, 1, "anet_intake_turned_away_total", "class", "unauthenticated", "code", "source_rate")
	wantSample(t, f, 2, "anet_evidence_appends_total", "kind", "task_received")
	if _, ok := f["go_goroutines"]; ok {
		t.Error("the Go runtime's series are served without Options.Runtime")
	}
}

func histogram(fams map[string]*dto.MetricFamily, name, route string) *dto.Histogram {
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "route" && l.GetValue() == route {
				return m.Histogram
			}
		}
	}
	return nil
}

// A nil *Metrics takes every call: the code paths without metrics need no checks.
func TestNilMetricsIsANoOp(t *testing.T) {
	var m *Metrics
	m.RunEnded("sandbox", "answered", time.Second)
	m.Refused("budget")
	m.RunRefused("spend_limit", 1)
	m.ObserveModelRequest(time.Second)
	m.IntakeAdmitted("known")
	m.IntakeTurnedAway("known", "rate_limited")
	m.EvidenceAppended("node_started")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("nil Metrics' handler: %d, want 404", rec.Code)
	}
}

// Label values that did not come from the node's catalogs cost a bounded number of series:
// a value of another shape, or one past the per-label cap, is "other".
func TestLabelValuesAreBounded(t *testing.T) {
	m := New(Options{})
	m.RunRefused("Evil Code\n{x=\"1\"}", 1)
	m.RunRefused(strings.Repeat("a", maxValueLen+1), 1)
	for i := range maxValuesPerLabel + 10 {
		m.EvidenceAppended("kind_" + strings.Repeat("x", i%50) + string(rune('a'+i/50)))
	}
	f := scrape(t, m.Handler())
	wantSample(t, f, 2, "anet_refusals_total", "to", "run", "code", OtherValue)
	if n := len(f["anet_evidence_appends_total"].GetMetric()); n != maxValuesPerLabel+1 {
		t.Errorf("evidence kinds served = %d, want %d and other", n, maxValuesPerLabel)
	}
	wantSample(t, f, 10, "anet_evidence_appends_total", "kind", OtherValue)
}

// The budget series are read from the callback when the scrape comes (not polled), so two
// scrapes around a change show it; per-peer spend carries the peer label.
func TestBudgetIsReadAtScrapeTime(t *testing.T) {
	b := &Budget{RunsToday: 3, RunsInFlight: 1, RunsLeft: 16, RunsPerDay: 20,
		Spend: &Spend{Spent: 120_000, InFlight: 50_000, Left: 4_830_000, PerDay: 5_000_000, PerPeer: 1_000_000,
			Peers: []PeerSpend{{Peer: "anpeer1", Spent: 120_000, InFlight: 50_000, Left: 830_000}}}}
	reads := 0
	m := New(Options{Budget: func(ctx context.Context) (*Budget, error) {
		reads++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the budget callback got a context without a deadline")
		}
		return b, nil
	}})
	if reads != 0 {
		t.Fatalf("budget read %d times before any scrape", reads)
	}
	f := scrape(t, m.Handler())
	wantSample(t, f, 3, "anet_runs_counted_today")
	wantSample(t, f, 1, "anet_runs_in_flight")
	wantSample(t, f, 16, "anet_runs_left_today")
	wantSample(t, f, 20, "anet_runs_per_day")
	wantSample(t, f, 120_000, "anet_spend_micros_today")
	wantSample(t, f, 50_000, "anet_spend_in_flight_micros")
	wantSample(t, f, 4_830_000, "anet_allowance_micros_today")
	wantSample(t, f, 5_000_000, "anet_spend_cap_micros", "cap", "day")
	wantSample(t, f, 1_000_000, "anet_spend_cap_micros", "cap", "peer")
	wantSample(t, f, 120_000, "anet_peer_spend_micros_today", "peer", "anpeer1")
	wantSample(t, f, 50_000, "anet_peer_spend_in_flight_micros", "peer", "anpeer1")
	wantSample(t, f, 830_000, "anet_peer_allowance_micros_today", "peer", "anpeer1")

	b.RunsToday, b.Spend.Spent = 4, 300_000
	f = scrape(t, m.Handler())
	wantSample(t, f, 4, "anet_runs_counted_today")
	wantSample(t, f, 300_000, "anet_spend_micros_today")
	if reads != 2 {
		t.Errorf("budget read %d times for two scrapes", reads)
	}

	// Without spend caps there is no spend to show; without an engine, no budget at all.
	b.Spend = nil
	f = scrape(t, m.Handler())
	wantSample(t, f, 4, "anet_runs_counted_today")
	if _, ok := f["anet_spend_micros_today"]; ok {
		t.Error("spend served without spend caps")
	}
	b = nil
	if f = scrape(t, m.Handler()); f["anet_runs_counted_today"] != nil {
		t.Error("budget served without a budget")
	}
}

// A budget that cannot be read costs its own series, not the scrape: the events still
// show, and the failure is logged.
func TestBudgetFailureKeepsTheScrape(t *testing.T) {
	lb := &testkit.Buffer{}
	m := New(Options{Budget: func(context.Context) (*Budget, error) { return nil, errors.New("database is locked") },
		Log: slog.New(slog.NewTextHandler(lb, nil))})
	m.Refused("budget")
	f := scrape(t, m.Handler())
	wantSample(t, f, 1, "anet_refusals_total", "to", "peer", "code", "budget")
	if f["anet_runs_counted_today"] != nil {
		t.Error("a failed budget read served a value")
	}
	if !strings.Contains(lb.String(), "database is locked") {
		t.Errorf("the failed read is not in the log: %q", lb)
	}
}

// N2: a helper that is not answering is shown down, with its restarts and its time
// unresponsive, read from the supervisors at scrape time.
func TestHelpersAtScrapeTime(t *testing.T) {
	hs := []Helper{{Name: "sandboxd", Up: true, Restarts: 2}, {Name: "egress", Up: false, Restarts: 1, Unresponsive: 7500 * time.Millisecond}}
	m := New(Options{Helpers: func() []Helper { return hs }})
	f := scrape(t, m.Handler())
	wantSample(t, f, 1, "anet_helper_up", "helper", "sandboxd")
	wantSample(t, f, 0, "anet_helper_up", "helper", "egress")
	wantSample(t, f, 2, "anet_helper_restarts_total", "helper", "sandboxd")
	wantSample(t, f, 1, "anet_helper_restarts_total", "helper", "egress")
	wantSample(t, f, 0, "anet_helper_unresponsive_seconds_total", "helper", "sandboxd")
	wantSample(t, f, 7.5, "anet_helper_unresponsive_seconds_total", "helper", "egress")
	if f["anet_helper_restarts_total"].GetType() != dto.MetricType_COUNTER {
		t.Errorf("anet_helper_restarts_total is a %v, want a counter", f["anet_helper_restarts_total"].GetType())
	}
}

// The runtime collectors, when asked for, are served beside the node's series.
func TestRuntimeCollectors(t *testing.T) {
	f := scrape(t, New(Options{Runtime: true}).Handler())
	for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
		if f[name] == nil {
			t.Errorf("%s not served with Options.Runtime", name)
		}
	}
}
