package node

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/metrics"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// refuseAll is an engine that refuses every task through the node's own Responder, as the
// auto-reply engine does when the sandbox is unavailable (F1).
type refuseAll struct{ done chan string }

func (e refuseAll) HandleTask(ctx context.Context, t peer.Task, r peer.Responder) {
	if err := r.Refuse(ctx, t.Peer, t.Interaction, reasons.SandboxUnavailable, time.Time{}); err != nil {
		e.done <- "refuse: " + err.Error()
		return
	}
	e.done <- t.Interaction
}

// scrapeNode GETs url with the bearer token and parses the text exposition.
func scrapeNode(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the scrape: %v", err)
	}
	return fams
}

// value is the value of name's series whose labels include labels (name, value pairs).
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && have[labels[i]] == labels[i+1]
		}
		if !match {
			continue
		}
		if m.Counter != nil {
			return m.Counter.GetValue(), true
		}
		return m.Gauge.GetValue(), true
	}
	return 0, false
}

// N2: a node's metrics, scraped over a socket with the bearer token, show what really
// happened: a stranger's task stored by intake, the refusal the node sent it,
// the evidence entries of both, and a real anet-sandboxd that stopped answering and came
// back.
func TestNodeMetricsShowRealEventsN2(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "anet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	eng := refuseAll{done: make(chan string, 1)}
	log := slog.New(slog.DiscardHandler)
	n := &Node{opts: Options{Engine: eng}, cfg: cfg, id: id, store: st, log: log}
	n.initMetrics()
	n.sandboxd = privsep.StartHelper(ctx, privsep.HelperSpec{
		Name: "sandboxd", Path: testharness.Bin(t, "anet-sandboxd"), Args: []string{"serve"},
		Env:       []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"},
		PingEvery: 50 * time.Millisecond, PingTimeout: 300 * time.Millisecond, KillAfter: time.Minute,
	}, log)
	t.Cleanup(func() { n.sandboxd.Stop(context.Background()) })
	if _, err := st.Append(ctx, id, store.EntryInput{Kind: "node_started"}); err != nil {
		t.Fatal(err)
	}
	if err := n.startPeers(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.peers.Close)

	token := "tok-" + id.AID()[:20]
	tokenFile := filepath.Join(dir, "metrics.token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(metrics.Protect(n.MetricsHandler(), tokenFile))
	t.Cleanup(srv.Close)

	stranger, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := peer.NewClient(stranger)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := cl.Dial(ctx, n.listenAddr(), id.AID())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	sm, err := peer.Sign(stranger, peer.Message{Type: peer.TypeTask, ID: "m-1", From: stranger.AID(), To: id.AID(), Sent: time.Now(), Interaction: "ix-1", Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if ack, err := conn.Send(sm); err != nil || ack.Status != peer.StatusAccepted {
		t.Fatalf("the stranger's task: %+v, %v", ack, err)
	}
	select {
	case got := <-eng.done:
		if got != "ix-1" {
			t.Fatalf("engine: %s", got)
		}
	case <-time.After(testkit.Wait):
		t.Fatal("the task never reached the engine")
	}
	testkit.WaitFor(t, "sandboxd running", func() bool { return n.sandboxd.Status().State == privsep.StateRunning })

	f := scrapeNode(t, srv.URL, token)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"anet_intake_admitted_total", []string{"class", "stranger"}, 1},
		{"anet_refusals_total", []string{"to", "peer", "code", string(reasons.SandboxUnavailable)}, 1},
		{"anet_evidence_appends_total", []string{"kind", "node_started"}, 1},
		{"anet_evidence_appends_total", []string{"kind", "task_received"}, 1},
		{"anet_evidence_appends_total", []string{"kind", "refusal_sent"}, 1},
		{"anet_helper_up", []string{"helper", "sandboxd"}, 1},
		{"anet_helper_restarts_total", []string{"helper", "sandboxd"}, 0},
	} {
		if got, ok := value(f, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if f["go_goroutines"] == nil || f["process_resident_memory_bytes"] == nil {
		t.Error("the runtime's and the process's series are missing")
	}
	if f["anet_runs_counted_today"] != nil {
		t.Error("budget series without an auto-reply engine")
	}

	// N2: the helper stops answering (SIGSTOP): the scrape shows it down while it is
	// silent, and the silence in the total once it answers again.
	pid := n.sandboxd.Status().PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "sandboxd unresponsive", func() bool { return n.sandboxd.Status().State == privsep.StateUnresponsive })
	if got, _ := value(scrapeNode(t, srv.URL, token), "anet_helper_up", "helper", "sandboxd"); got != 0 {
		t.Errorf("anet_helper_up of an unresponsive helper = %v, want 0", got)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "sandboxd answering again", func() bool { return n.sandboxd.Status().State == privsep.StateRunning })
	f = scrapeNode(t, srv.URL, token)
	if got, _ := value(f, "anet_helper_unresponsive_seconds_total", "helper", "sandboxd"); got < 0.3 {
		t.Errorf("anet_helper_unresponsive_seconds_total = %v, want at least the 0.3 s ping timeout", got)
	}
	if got, _ := value(f, "anet_helper_up", "helper", "sandboxd"); got != 1 {
		t.Errorf("anet_helper_up after SIGCONT = %v, want 1", got)
	}
}
