package autoreply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// ScanInterval is the floor of the scheduler: a waiting task is looked at again at least
// this often (B6), and sooner when a run ends.
const ScanInterval = limits.ScanInterval

// RunResult is a finished run with what the agent wrote.
type RunResult = sandbox.RunResult

// Endpoints is anet-egress's per-run endpoint service.
type Endpoints interface {
	Open(ctx context.Context, p egresswire.Policy) (egresswire.OpenReply, error)
	// Close ends the run's endpoint and returns its usage (JSON).
	Close(ctx context.Context, runID string) (json.RawMessage, error)
}

// Completer is anet-egress's one-shot chat completion (the openai back-end, P3).
type Completer interface {
	Complete(ctx context.Context, req egresswire.CompleteRequest) (egresswire.CompleteReply, error)
}

// Dirs are the host directories turns use.
type Dirs struct {
	// SandboxWork is <cache>/anet/work-sandbox; DirectWork is <cache>/anet/work or work_dir.
	SandboxWork, DirectWork string
	// RunRoot holds each run's home and tmp while it runs.
	RunRoot string
	// Hidden are never visible in a sandboxed run (data, runtime and config dirs, token).
	Hidden []string
	// RunLogs keeps each run's log, <peer>/<interaction>/<run>.log, swept like the work
	// dirs; "" keeps none.
	RunLogs string
}

// Options configure an Engine. Sandbox, Endpoints, Completer and Ledger are required.
type Options struct {
	Config config.AutoReply
	Dirs   Dirs
	// Sandbox starts every run (anetd's is anet-sandboxd behind pkg/sandbox/remote): the
	// engine itself never starts a process.
	Sandbox   sandbox.Launcher
	Endpoints Endpoints
	Completer Completer
	Ledger    Ledger
	// LookPath finds the agent's program; nil is exec.LookPath (anetd's PATH).
	LookPath func(string) (string, error)
	Now      func() time.Time
	Log      *slog.Logger
	// Scan overrides ScanInterval (tests of the scan itself); zero is ScanInterval.
	Scan time.Duration
	// Ready, if set, waits (bounded) until the helpers have started: tasks still new at
	// start-up arrive before they have, and a helper that is starting is not one that is
	// down. After it returns, a helper that is not running fails the turn closed.
	Ready func(ctx context.Context)
	// Observer hears how each turn ends (the node's metrics); nil hears nothing.
	Observer Observer
	// Wall, if set, is the verdict of the node's last proof of the wall (its helpers'
	// self-tests, S7): nil while it passed or none was made yet, else the refusal with its
	// code (wall_unproven) and the failed item. A sandboxed turn whose probe passes is still
	// not started while it refuses (F1); it is asked after the probe, so a probe's own
	// reason (no_bwrap, …) is the one the operator sees when both fail.
	Wall func() *reasons.Error
}

// Engine is the auto-reply engine (peer.Engine).
type Engine struct {
	o     Options
	sched *Scheduler
	log   *slog.Logger
	// settings are the auto_reply section and work root in force for turns that start now;
	// a turn takes them once, at its start, and keeps them to its end (U3).
	settings atomic.Pointer[Settings]

	mu     sync.Mutex // guards the fields that follow
	active map[string]ActiveRun
	probe  *sandbox.ProbeResult
	probed time.Time
	events map[reasons.Code]*Event
}

// Settings are what a reload can change: the auto_reply section and the unsandboxed work
// root (auto_reply.work_dir).
type Settings struct {
	Config     config.AutoReply
	DirectWork string
}

// current returns the settings for a turn that starts now.
func (e *Engine) current() *Settings { return e.settings.Load() }

// Reload makes s the settings of every turn that starts from now on; turns in flight keep the
// ones they started with (U3). s is validated first; an invalid one changes nothing.
func (e *Engine) Reload(s Settings) error {
	full := config.Default()
	full.AutoReply = s.Config
	if err := full.Validate(); err != nil {
		return fmt.Errorf("auto-reply engine: %w", err)
	}
	if s.DirectWork == "" {
		s.DirectWork = e.current().DirectWork
	}
	e.settings.Store(&s)
	e.sched.SetLimits(schedulerLimits(s.Config))
	return nil
}

// schedulerLimits are the budget figures of c (B2, K2).
func schedulerLimits(c config.AutoReply) Limits {
	sb := c.Sandbox
	return Limits{PerDay: sb.RunsPerDay, PerPeer: sb.RunsPerPeerPerDay,
		Spend: &SpendCaps{PerDay: sb.SpendPerDay, PerPeer: sb.SpendPerPeerPerDay}}
}

// ActiveRun is a turn in progress, for status.
type ActiveRun struct {
	Run         string    `json:"run"`
	Peer        string    `json:"peer"`
	Interaction string    `json:"interaction"`
	Route       Route     `json:"route"`
	Started     time.Time `json:"started"`
}

// Event is a reason code the engine met, for status (F2).
type Event struct {
	Code   reasons.Code `json:"code"`
	Count  int          `json:"count"`
	Last   time.Time    `json:"last"`
	Detail string       `json:"detail,omitempty"`
}

// New checks o and returns the engine.
func New(o Options) (*Engine, error) {
	if o.Sandbox == nil || o.Endpoints == nil || o.Completer == nil || o.Ledger.Store == nil || o.Ledger.Signer == nil {
		return nil, errors.New("auto-reply engine: Sandbox, Endpoints, Completer and Ledger are required")
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Scan <= 0 {
		o.Scan = ScanInterval
	}
	full := config.Default()
	full.AutoReply = o.Config
	if err := full.Validate(); err != nil {
		return nil, fmt.Errorf("auto-reply engine: %w", err)
	}
	e := &Engine{o: o, log: o.Log.With("component", "autoreply"), active: map[string]ActiveRun{}, events: map[reasons.Code]*Event{}}
	e.settings.Store(&Settings{Config: o.Config, DirectWork: o.Dirs.DirectWork})
	e.sched = NewScheduler(schedulerLimits(o.Config), o.Ledger, o.Now)
	return e, nil
}

// HandleTask answers one new inbox task (peer.Engine). It returns when the task is
// answered, refused, or left in the inbox, or when ctx ends.
func (e *Engine) HandleTask(ctx context.Context, t peer.Task, r peer.Responder) {
	if e.o.Ready != nil {
		e.o.Ready(ctx)
	}
	set := e.current()
	d := Decide(set.Config, t.Trusted)
	log := e.log.With("peer", t.Peer, "interaction", t.Interaction, "route", d.Route, "trusted", t.Trusted)
	switch d.Route {
	case RouteOff:
		log.Info("task left in the inbox", "code", d.Code)
		return
	case RouteRefuse:
		e.refuse(ctx, log, t, r, d.Refusal, d.Code, d.Why)
		e.ended(d.Route, OutcomeRefused, time.Time{})
		return
	}
	var ticket *Ticket
	if d.Untrusted {
		var ok bool
		if ticket, ok = e.admit(ctx, log, t, r, d.Route); !ok {
			return
		}
		defer ticket.Release()
	}
	e.turn(ctx, log, t, r, d, set, ticket.Allowance())
}

// admit waits for a slot and budget for a turn on route; false means the task was refused,
// held or ctx ended.
func (e *Engine) admit(ctx context.Context, log *slog.Logger, t peer.Task, r peer.Responder, route Route) (*Ticket, bool) {
	waited := false
	for {
		changed := e.sched.Changed()
		ticket, v, until, err := e.sched.Admit(ctx, t.Peer)
		if err != nil {
			log.Error("budget check failed; will retry", "err", err)
			v = Wait
		}
		switch v {
		case Admitted:
			return ticket, true
		case Hold:
			e.note(BudgetZero, "")
			log.Info("task left in the inbox: run budget is 0", "code", BudgetZero)
			e.ended(route, OutcomeHeld, time.Time{})
			return nil, false
		case HoldSpend:
			e.note(SpendZero, "")
			log.Info("task left in the inbox: spend cap is 0", "code", SpendZero)
			e.ended(route, OutcomeHeld, time.Time{})
			return nil, false
		case Spent:
			e.note(reasons.Budget, "")
			log.Info("budget spent", "until", until)
			if err := e.o.Ledger.Refused(ctx, t.Peer, t.Interaction, map[string]any{"code": reasons.Budget, "until": until.UTC()}); err != nil {
				log.Error("evidence: turn_refused", "err", err)
			}
			if err := r.Refuse(ctx, t.Peer, t.Interaction, reasons.Budget, until); err != nil {
				log.Error("refuse", "code", reasons.Budget, "err", err)
			}
			e.ended(route, OutcomeRefused, time.Time{})
			return nil, false
		}
		if !waited {
			log.Info("no run slot free; the task waits for the next scan")
			waited = true
		}
		timer := time.NewTimer(e.o.Scan)
		select {
		case <-ctx.Done():
			timer.Stop()
			e.ended(route, OutcomeInterrupted, time.Time{})
			return nil, false
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// refuse sends refusal to the requester and records the operator's code.
func (e *Engine) refuse(ctx context.Context, log *slog.Logger, t peer.Task, r peer.Responder, refusal, code reasons.Code, detail string) {
	e.note(code, detail)
	log.Warn("turn refused", "refusal", refusal, "code", code, "detail", detail)
	if err := e.o.Ledger.Refused(ctx, t.Peer, t.Interaction, map[string]any{"code": refusal, "reason": code, "detail": detail}); err != nil {
		log.Error("evidence: turn_refused", "err", err)
	}
	var until time.Time
	if refusal == reasons.Budget {
		// A turn refused for its spend (K2) waits for the day's end like a spent budget (B4).
		_, until = DayBounds(e.o.Now())
	}
	if err := r.Refuse(ctx, t.Peer, t.Interaction, refusal, until); err != nil {
		log.Error("refuse", "code", refusal, "err", err)
	}
}

// note remembers a reason code for status.
func (e *Engine) note(code reasons.Code, detail string) {
	if code == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ev := e.events[code]
	if ev == nil {
		ev = &Event{Code: code}
		e.events[code] = ev
	}
	ev.Count++
	ev.Last = e.o.Now().UTC()
	ev.Detail = detail
}

// codeOf returns the reason code an error carries (from a helper or this node).
func codeOf(err error) reasons.Code {
	var pe *privsep.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	var re *reasons.Error
	if errors.As(err, &re) {
		return re.Code
	}
	return reasons.Internal
}
