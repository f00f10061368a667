package autoreply

import (
	"context"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// TestTask is the fixed task of `anet autoreply test` (S8).
const TestTask = "This is `anet autoreply test`. Answer with one short sentence that says the test worked."

// testPeer is the work-dir name of test runs; it is not an aid, so it never collides with a
// peer's work dir.
const testPeer = "autoreply-test"

// KindAutoReplyTest is the evidence entry of a test run. It is never counted (B1).
const KindAutoReplyTest = "autoreply_test"

// TestEvent is a stage's check as the stage ends, or, with Progress, how a stage goes while it
// runs (the agent's elapsed time, its model calls): streamed, not kept in the report.
type TestEvent struct {
	check.Check
	Progress bool `json:"progress,omitempty"`
}

// TestReport is the result of `anet autoreply test`: one check per stage of the turn
// (pkg/check's shape), with the reason code of the stage that failed.
type TestReport struct {
	check.Report
	// Trusted says which class of peer's path was tested: the untrusted one unless it is off.
	Trusted bool   `json:"trusted"`
	Route   Route  `json:"route"`
	Answer  string `json:"answer,omitempty"`
	Counted bool   `json:"counted"`
	// RunLog is the file that keeps the run's log (agent stderr, outcome, model calls).
	RunLog string `json:"run_log,omitempty"`
}

// stageRequirement names the requirement a stage of the test proves, where one stage maps to
// one requirement.
var stageRequirement = map[string]string{"probe": "S7", "model_call": "E1", "answer": "S8"}

// Test runs TestTask through the configured path: policy, probe, endpoint, sandbox start,
// model call, answer. It takes no slot and is never counted; it leaves one autoreply_test
// entry in the chain. emit, when not nil, gets each stage as it ends and progress lines
// while the agent runs (elapsed time, model calls with the upstream's answers).
func (e *Engine) Test(ctx context.Context, emit func(TestEvent)) TestReport {
	rep := TestReport{Report: check.Report{Checks: []check.Check{}}}
	set := e.current()
	d := Decide(set.Config, false)
	if d.Route == RouteOff {
		rep.Trusted = true
		d = Decide(set.Config, true)
	}
	rep.Route = d.Route
	tr := &tracer{emit: emit}
	policy := "untrusted peers: " + string(d.Route)
	if rep.Trusted {
		policy = "untrusted peers: off; trusted peers: " + string(d.Route)
	}
	switch d.Route {
	case RouteOff:
		tr.fail("policy", d.Code, "auto-reply is off for trusted and untrusted peers")
		return e.finishTest(ctx, rep, tr)
	case RouteRefuse:
		tr.fail("policy", d.Code, d.Why)
		return e.finishTest(ctx, rep, tr)
	}
	tr.ok("policy", policy)
	run := newRunID()
	t := peer.Task{Peer: testPeer, Interaction: run, Text: TestTask, Trusted: rep.Trusted}
	log := e.log.With("run", run, "test", true)
	// The untrusted path is tested with one peer's whole allowance, so that a model whose
	// spend cannot be metered (model_unpriced) shows here (K2); the test is not counted and
	// its spend is not part of the day's.
	var allowance *money.Micros
	if d.Counted {
		a := set.Config.Sandbox.SpendPerPeerPerDay
		allowance = &a
	}
	var out outcome
	if d.Route == RouteOpenAI {
		out = e.openaiTurn(ctx, log, run, t, set, allowance, func() {}, tr)
	} else {
		out = e.execTurn(ctx, log, run, t, d.Route, set, allowance, func() {}, tr)
		if d.Route == RouteSandbox && out.ran {
			tr.modelCall(out)
		}
	}
	rep.Answer = out.answer
	rep.RunLog = e.keepRunLog(log, t, run, set, d.Route, out)
	return e.finishTest(ctx, rep, tr)
}

// modelCall reports whether the run's model requests reached the upstream and were
// answered, from the endpoint's usage; a failure names the cause the endpoint saw.
func (tr *tracer) modelCall(out outcome) {
	m, ok := parseModelUsage(out.usage)
	switch {
	case !ok:
		tr.fail("model_call", reasons.Internal, "the endpoint reported no usage")
	case m.Forwarded == 0:
		tr.fail("model_call", TurnFailed, "the agent sent no model request through the endpoint")
	case m.failure() != "":
		tr.fail("model_call", ModelCallFailed, m.failure())
	default:
		tr.ok("model_call", m.summary())
	}
}

func (e *Engine) finishTest(ctx context.Context, rep TestReport, tr *tracer) TestReport {
	rep.Checks = append(rep.Checks, tr.checks...)
	rep.OK = check.AllOK(rep.Checks)
	if _, err := e.o.Ledger.Store.Append(ctx, e.o.Ledger.Signer, store.EntryInput{Kind: KindAutoReplyTest, Details: map[string]any{"ok": rep.OK, "route": rep.Route, "stages": rep.Checks}}); err != nil {
		e.log.Error("evidence: autoreply_test", "err", err)
	}
	return rep
}
