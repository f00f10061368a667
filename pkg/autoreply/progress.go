package autoreply

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
)

// tracer reports the stages of `anet autoreply test` (S8): each stage as it ends, and
// progress lines while the agent runs. A nil *tracer reports nothing (real turns).
type tracer struct {
	mu     sync.Mutex
	checks []check.Check
	// emit, when set, gets every stage and progress line as it happens.
	emit func(TestEvent)
}

func (tr *tracer) add(ev TestEvent) {
	if tr == nil {
		return
	}
	tr.mu.Lock()
	if !ev.Progress {
		tr.checks = append(tr.checks, ev.Check)
	}
	emit := tr.emit
	tr.mu.Unlock()
	if emit != nil {
		emit(ev)
	}
}

func (tr *tracer) ok(stage, detail string) {
	tr.add(TestEvent{Check: check.Pass(stage, stageRequirement[stage], detail)})
}

func (tr *tracer) fail(stage string, code reasons.Code, detail string) {
	tr.add(TestEvent{Check: check.Fail(stage, stageRequirement[stage], code, detail)})
}

// progress reports how a stage goes; it is shown as it happens, not kept in the report.
func (tr *tracer) progress(stage, detail string) {
	tr.add(TestEvent{Check: check.Pass(stage, stageRequirement[stage], detail), Progress: true})
}

// progressEvery is how often a running agent's elapsed time and model calls are reported.
var progressEvery = time.Second

// elapsedEvery is how often the elapsed time is reported when nothing else changed.
const elapsedEvery = 5 * time.Second

// usageReader is the endpoint's live usage (anet-egress's endpoint.usage); optional.
type usageReader interface {
	Usage(ctx context.Context, runID string) (json.RawMessage, error)
}

// watchRun reports, while the agent of run runs, the elapsed time and each change of its
// model calls with the upstream's answers. It returns the function that stops it.
func (tr *tracer) watchRun(ctx context.Context, ep Endpoints, run string) func() {
	if tr == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		lastElapsed, lastModel := start, ""
		ur, _ := ep.(usageReader)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if ur != nil {
					if u, err := ur.Usage(ctx, run); err == nil {
						if m, ok := parseModelUsage(u); ok && m.Forwarded > 0 {
							if s := m.summary(); s != lastModel {
								lastModel = s
								tr.progress("model_call", s)
							}
						}
					}
				}
				if now.Sub(lastElapsed) >= elapsedEvery {
					lastElapsed = now
					tr.progress("run", fmt.Sprintf("agent running, %d s", int(now.Sub(start).Seconds())))
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// modelUsage is the part of an endpoint's usage that says how the model calls went.
type modelUsage struct {
	Requests  int64        `json:"requests"`
	Forwarded int64        `json:"forwarded"`
	Spend     *money.Spend `json:"spend,omitempty"`
	Upstream  struct {
		Statuses  map[string]int64 `json:"statuses"`
		Failed    int64            `json:"failed"`
		LastError string           `json:"last_error"`
		KeyEchoes int64            `json:"key_echoes"`
	} `json:"upstream"`
}

func parseModelUsage(raw json.RawMessage) (modelUsage, bool) {
	var u struct {
		Model modelUsage `json:"model"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &u) != nil {
		return modelUsage{}, false
	}
	return u.Model, true
}

// answered2xx counts the forwarded requests the upstream answered with success.
func (m modelUsage) answered2xx() int64 {
	var n int64
	for code, c := range m.Upstream.Statuses {
		if strings.HasPrefix(code, "2") {
			n += c
		}
	}
	return n
}

// summary is one line: "2 forwarded: upstream 200×1, 529×1" or "… 1 failed: lookup …".
func (m modelUsage) summary() string {
	var parts []string
	codes := make([]string, 0, len(m.Upstream.Statuses))
	for c := range m.Upstream.Statuses {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s×%d", c, m.Upstream.Statuses[c]))
	}
	s := fmt.Sprintf("%d model request(s) forwarded", m.Forwarded)
	if len(parts) > 0 {
		s += ": upstream " + strings.Join(parts, ", ")
	}
	if m.Upstream.Failed > 0 {
		s += fmt.Sprintf("; %d got no answer: %s", m.Upstream.Failed, m.Upstream.LastError)
	}
	if n := m.Upstream.KeyEchoes; n > 0 {
		// E1: the agent got the key redacted; the operator learns that the service echoes it.
		s += fmt.Sprintf("; the model service echoed the operator's key in %d answer(s), redacted before the agent", n)
	}
	if sp := m.Spend; sp != nil && sp.Responses > 0 {
		s += fmt.Sprintf("; spend %s (%d in, %d out tokens)", sp.Cost, sp.Tokens.Input, sp.Tokens.Output)
	}
	return s
}

// failure names why the model calls failed, when none succeeded: "11 of 11 upstream requests
// failed: lookup api.anthropic.com: …", or the statuses the upstream answered with.
func (m modelUsage) failure() string {
	if m.Forwarded == 0 || m.answered2xx() > 0 {
		return ""
	}
	if m.Upstream.Failed > 0 {
		return fmt.Sprintf("%d of %d upstream requests failed: %s", m.Upstream.Failed, m.Forwarded, m.Upstream.LastError)
	}
	return fmt.Sprintf("%d of %d upstream requests were refused by the model service (%s)", m.Forwarded, m.Forwarded, strings.TrimPrefix(m.summary(), fmt.Sprintf("%d model request(s) forwarded: ", m.Forwarded)))
}
