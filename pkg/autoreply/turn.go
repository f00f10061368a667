package autoreply

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"maps"
	"time"

	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
)

// outcome is how a turn ended, for the requester and the chain.
type outcome struct {
	answer string
	// refusal is sent when answer is empty; code is the operator's reason.
	refusal reasons.Code
	code    reasons.Code
	detail  string
	// ran: a program started (or a model was called), so the turn counts when Counted.
	ran bool
	// hold: nothing ran and nobody is told; the task stays in the inbox (agent missing).
	hold    bool
	details map[string]any
	// usage is the endpoint's usage of a sandboxed run that ran (from its endpoint's close;
	// none when the close failed).
	usage json.RawMessage
	// metered: the run's model calls went through the node, so it has a spend (K1); spend
	// is set when it is known (from usage, or the openai back-end's reply).
	metered bool
	spend   *money.Spend
	// stderr is the agent's standard error, clipped, with the run's token masked: the run's
	// log keeps it.
	stderr []byte
}

// turn runs one admitted task through its back-end and answers it. allowance is what the run
// may spend on the model (K2); nil for turns without spend caps (trusted peers).
func (e *Engine) turn(ctx context.Context, log *slog.Logger, t peer.Task, r peer.Responder, d Decision, set *Settings, allowance *money.Micros) {
	run := newRunID()
	log = log.With("run", run)
	e.setActive(ActiveRun{Run: run, Peer: t.Peer, Interaction: t.Interaction, Route: d.Route, Started: e.o.Now().UTC()})
	defer e.clearActive(run)

	started := func() {
		if err := e.o.Ledger.Started(ctx, t.Peer, t.Interaction, map[string]any{"run": run, "route": d.Route, "counted": d.Counted, "agent": set.Config.Agent}); err != nil {
			log.Error("evidence: turn_started", "err", err)
		}
	}
	began := time.Now()
	var out outcome
	switch d.Route {
	case RouteSandbox, RouteDirect:
		out = e.execTurn(ctx, log, run, t, d.Route, set, allowance, started, nil)
	case RouteOpenAI:
		out = e.openaiTurn(ctx, log, run, t, set, allowance, started, nil)
	}
	e.keepRunLog(log, t, run, set, d.Route, out)
	e.noteRunRefusals(out.usage)
	if ctx.Err() != nil {
		// anetd is stopping: the run was ended with it. No completion entry, so it is not
		// counted (B7), and the task is still new: it runs again after the restart.
		log.Info("turn interrupted by shutdown; the task stays in the inbox")
		e.ended(d.Route, OutcomeInterrupted, time.Time{})
		return
	}
	if out.hold {
		e.note(out.code, out.detail)
		log.Warn("task left in the inbox", "code", out.code, "detail", out.detail)
		e.ended(d.Route, OutcomeHeld, time.Time{})
		return
	}
	if !out.ran {
		e.refuse(ctx, log, t, r, out.refusal, out.code, out.detail)
		e.ended(d.Route, OutcomeRefused, time.Time{})
		return
	}
	counted := d.Counted
	details := out.details
	if details == nil {
		details = map[string]any{}
	}
	details["run"], details["route"] = run, d.Route
	usage, rc, rerr := takeReceipts(out.usage)
	if rerr != nil {
		log.Warn("the run's receipts cannot be read; its completion is recorded without them", "err", rerr)
	}
	e.noteModelRequests(rc)
	if len(usage) > 0 {
		details["usage"] = usage
	}
	if rc == nil && d.Route == RouteSandbox {
		// A sandboxed run went through its endpoint, which reports receipts: say that they
		// are missing rather than leave a run that reached nothing to be presumed.
		details[detailReceiptsMissing] = true
	}
	if s, ok := out.runSpend(); ok {
		maps.Copy(details, spendDetails(s))
	} else if out.metered && allowance != nil {
		log.Warn("the run's spend is unknown; its whole allowance counts as spent", "allowance", allowance.String())
		maps.Copy(details, unknownSpend(*allowance))
	}
	if out.answer == "" {
		details["code"], details["reason"], details["detail"] = out.refusal, out.code, out.detail
	}
	// Record the completion before answering: the count must hold even if the node dies
	// between the two (a turn that ran and cost money counts, B1).
	err := e.o.Ledger.Completed(ctx, t.Peer, t.Interaction, counted, details, rc)
	if err != nil && rc != nil {
		// The completion and its count matter more than the receipts (B1): try it without.
		log.Error("evidence: turn_completed with its receipts", "err", err)
		delete(details, usageReceipts)
		details[detailReceiptsMissing] = true
		err = e.o.Ledger.Completed(ctx, t.Peer, t.Interaction, counted, details, nil)
	}
	if err != nil {
		log.Error("evidence: turn_completed", "err", err)
	}
	if out.answer == "" {
		e.note(out.code, out.detail)
		log.Warn("turn gave no answer", "code", out.code, "detail", out.detail)
		if err := r.Refuse(ctx, t.Peer, t.Interaction, out.refusal, time.Time{}); err != nil {
			log.Error("refuse", "code", out.refusal, "err", err)
		}
		e.ended(d.Route, OutcomeFailed, began)
		return
	}
	log.Info("turn answered", "counted", counted, "bytes", len(out.answer), "cost_micros", details[detailCost])
	if err := r.Reply(ctx, t.Peer, t.Interaction, out.answer); err != nil {
		log.Error("reply", "err", err)
	}
	e.ended(d.Route, OutcomeAnswered, began)
}

// runSpend is the run's spend: the openai back-end's, or the one in the endpoint's usage.
func (o outcome) runSpend() (money.Spend, bool) {
	if o.spend != nil {
		return *o.spend, true
	}
	return endpointSpend(o.usage)
}

func (e *Engine) setActive(a ActiveRun) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active[a.Run] = a
}

func (e *Engine) clearActive(run string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.active, run)
}

// newRunID names a run: it becomes a directory, a cgroup and the endpoint's id.
func newRunID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "r" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b)
}
