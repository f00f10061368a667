package autoreply

import (
	"cmp"
	"context"
	"sort"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// probeNow asks the helper for the probe (it caches five minutes) and remembers the result
// for status.
func (e *Engine) probeNow(ctx context.Context) (sandbox.ProbeResult, error) {
	res, err := e.o.Sandbox.Probe(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.probed = e.o.Now().UTC()
	if err != nil {
		e.probe = &sandbox.ProbeResult{OK: false, Code: codeOf(err), Detail: err.Error(), At: e.probed}
		return res, err
	}
	e.probe = &res
	return res, nil
}

// noteSandboxDown records a sandbox failure met when a run started (a failed self-check
// before the turn, M1) as the sandbox's state for status, until the next probe.
func (e *Engine) noteSandboxDown(code reasons.Code, detail string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := sandbox.ProbeResult{}
	if e.probe != nil {
		p = *e.probe
	}
	p.OK, p.Code, p.Detail, p.At = false, code, detail, e.o.Now().UTC()
	e.probe, e.probed = &p, p.At
}

// noteLimits records how the last run's memory and task limits were enforced.
func (e *Engine) noteLimits(l sandbox.CgroupLimits) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.probe != nil {
		p := *e.probe
		p.Limits = l
		e.probe = &p
	}
}

// usesSandbox reports whether any turn can need the sandbox.
func (e *Engine) usesSandbox() bool {
	c := e.current().Config
	return c.Backend == config.BackendExec && (c.Untrusted == config.ModeSandbox || c.Trusted == config.ModeSandbox)
}

// refreshProbe probes for status when the last probe failed, is older than limits.ProbeTTL or
// never ran. It runs in the status call itself rather than in the background, so the helper
// does nothing the operator did not ask for.
func (e *Engine) refreshProbe(ctx context.Context) {
	if !e.usesSandbox() {
		return
	}
	e.mu.Lock()
	fresh := e.probe != nil && e.probe.OK && e.o.Now().Sub(e.probed) < limits.ProbeTTL
	e.mu.Unlock()
	if !fresh {
		e.probeNow(ctx)
	}
}

// SandboxState is the sandbox as status shows it (F2, S6).
type SandboxState struct {
	Probed bool         `json:"probed"`
	OK     bool         `json:"ok"`
	Code   reasons.Code `json:"code,omitempty"`
	Detail string       `json:"detail,omitempty"`
	// Limits is "full" or "no_cgroup_limits".
	Limits string `json:"limits,omitempty"`
	// Tier is the isolation probed: "bwrap" or "vm (ACCEL, TRANSPORT)" (V1).
	Tier string `json:"tier,omitempty"`
	// Mechanism is how the limits are enforced (sandbox.ProbeResult.Mechanism).
	Mechanism string    `json:"mechanism,omitempty"`
	At        time.Time `json:"at,omitzero"`
}

// Status is the engine's state for `anet status`.
type Status struct {
	Backend   string       `json:"backend"`
	Agent     string       `json:"agent"`
	Trusted   string       `json:"trusted"`
	Untrusted string       `json:"untrusted"`
	Active    []ActiveRun  `json:"active"`
	Budget    Usage        `json:"budget"`
	Sandbox   SandboxState `json:"sandbox"`
	Events    []Event      `json:"events"`
}

// Status snapshots the engine.
func (e *Engine) Status(ctx context.Context) (Status, error) {
	c := e.current().Config
	st := Status{Backend: string(c.Backend), Agent: string(c.Agent), Trusted: string(c.Trusted), Untrusted: string(c.Untrusted), Active: []ActiveRun{}, Events: []Event{}}
	u, err := e.sched.Usage(ctx)
	if err != nil {
		return st, err
	}
	st.Budget = u
	e.refreshProbe(ctx)
	e.mu.Lock()
	for _, a := range e.active {
		st.Active = append(st.Active, a)
	}
	for _, ev := range e.events {
		st.Events = append(st.Events, *ev)
	}
	if p := e.probe; p != nil {
		st.Sandbox = SandboxState{Probed: true, OK: p.OK, Code: p.Code, Detail: p.Detail, At: p.At, Limits: limitsWord(p), Tier: cmp.Or(p.Tier(), string(c.Sandbox.Isolation)), Mechanism: p.Mechanism}
	}
	e.mu.Unlock()
	sort.Slice(st.Active, func(i, j int) bool { return st.Active[i].Started.Before(st.Active[j].Started) })
	sort.Slice(st.Events, func(i, j int) bool { return st.Events[i].Code < st.Events[j].Code })
	return st, nil
}

func limitsWord(p *sandbox.ProbeResult) string {
	switch p.Limits {
	case sandbox.CgroupFull:
		return "full"
	case sandbox.CgroupNone:
		return string(reasons.NoCgroupLimits)
	}
	return ""
}

// Budget reads today's run budget and spend (B1, B6, K2) without the rest of Status: the
// node's metrics read it on every scrape, and it probes nothing.
func (e *Engine) Budget(ctx context.Context) (Usage, error) { return e.sched.Usage(ctx) }
