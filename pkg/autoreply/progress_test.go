package autoreply

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/pkg/config"
)

// usageEndpoints reports a live usage for the run's endpoint (anet-egress's endpoint.usage).
type usageEndpoints struct {
	recEndpoints
	mu    sync.Mutex
	usage string
}

func (u *usageEndpoints) Usage(context.Context, string) (json.RawMessage, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return json.RawMessage(u.usage), nil
}

// S8: `anet autoreply test` reports each stage as it happens and, while the agent runs, its
// model calls with what the upstream answered: the progress line arrives while the run is
// still held, before the run's own stage.
func TestTestReportsProgressWhileTheAgentRuns(t *testing.T) {
	old := progressEvery
	progressEvery = 10 * time.Millisecond
	defer func() { progressEvery = old }()
	sb := &heldSandbox{started: make(chan struct{}, 1), release: make(chan struct{})}
	ep := &usageEndpoints{usage: `{"model":{"requests":2,"forwarded":2,"upstream":{"statuses":{"200":1,"529":1}}}}`}
	dir := t.TempDir()
	e, err := New(Options{
		Config: config.Default().AutoReply, Sandbox: sb, Endpoints: ep, Completer: noCompleter{}, Ledger: testLedger(t),
		Dirs:     Dirs{SandboxWork: filepath.Join(dir, "ws"), DirectWork: filepath.Join(dir, "w"), RunRoot: filepath.Join(dir, "runs"), RunLogs: filepath.Join(dir, "logs")},
		LookPath: func(name string) (string, error) { return "/opt/agents/" + name, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan TestEvent, 64)
	done := make(chan TestReport, 1)
	go func() { done <- e.Test(context.Background(), func(ev TestEvent) { events <- ev }) }()
	<-sb.started
	deadline := time.After(30 * time.Second)
	var seen []TestEvent
	for progress := false; !progress; {
		select {
		case s := <-events:
			seen = append(seen, s)
			progress = s.Progress && s.Name == "model_call" && s.Detail == "2 model request(s) forwarded: upstream 200×1, 529×1"
		case <-deadline:
			t.Fatalf("no model_call progress while the agent ran; events: %+v", seen)
		}
	}
	for _, s := range seen {
		if s.Name == "run" && !s.Progress {
			t.Fatalf("the run's stage was reported before the run ended: %+v", seen)
		}
	}
	close(sb.release)
	rep := <-done
	for _, c := range rep.Checks {
		if c.Name == "run" && c.Detail == "agent started" {
			t.Fatalf("a progress line is in the report: %+v", rep.Checks)
		}
	}
	if rep.RunLog == "" || filepath.Dir(filepath.Dir(rep.RunLog)) != filepath.Join(dir, "logs", testPeer) {
		t.Fatalf("run log = %q, want one under the run-logs root", rep.RunLog)
	}
}

// E1: a run whose model service echoed the key says so in its model-call line (the key
// itself never came out of the proxy).
func TestSummaryNamesKeyEchoesE1(t *testing.T) {
	m, ok := parseModelUsage(json.RawMessage(`{"model":{"requests":1,"forwarded":1,"upstream":{"statuses":{"401":1},"key_echoes":1}}}`))
	if want := "1 model request(s) forwarded: upstream 401×1; the model service echoed the operator's key in 1 answer(s), redacted before the agent"; !ok || m.summary() != want {
		t.Fatalf("summary = %q, want %q", m.summary(), want)
	}
}
