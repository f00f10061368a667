package autoreply

import (
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/reasons"
)

// Route is how one turn runs.
type Route string

const (
	// RouteOff: no automatic answer; the task waits in the inbox for the operator.
	RouteOff Route = "off"
	// RouteSandbox: the exec back-end inside the sandbox (P1); never anywhere else (P2).
	RouteSandbox Route = "sandbox"
	// RouteDirect: the exec back-end as the operator's user (P4, trusted peers only).
	RouteDirect Route = "direct"
	// RouteOpenAI: one chat completion through anet-egress; no program (P3).
	RouteOpenAI Route = "openai"
	// RouteRefuse: the policy itself cannot be carried out (cursor in the sandbox).
	RouteRefuse Route = "refuse"
)

// Decision is the policy's answer for one task: a value with its reason.
type Decision struct {
	Route Route
	// Untrusted turns take a slot (B6) and are checked against the budget (B2–B4).
	Untrusted bool
	// Counted turns count against the budget once they ran (B1).
	Counted bool
	// Refusal is what the requester gets for RouteRefuse; Code is the operator's reason.
	Refusal reasons.Code
	Code    reasons.Code
	Why     string
}

// Decide applies P1–P4 to one task: trust first, then the mode for that class of peer, then
// the back-end. Pure: it looks at nothing but its arguments.
func Decide(c config.AutoReply, trusted bool) Decision {
	mode := c.Untrusted
	if trusted {
		mode = c.Trusted
	}
	d := Decision{Untrusted: !trusted}
	switch {
	case mode == config.ModeOff || mode == "":
		d.Route, d.Code, d.Why = RouteOff, AutoReplyOff, "mode off"
		return d
	case !trusted && mode != config.ModeSandbox:
		// Validate refuses `untrusted: direct`; fail closed should a Config skip it.
		d.Route, d.Refusal, d.Code, d.Why = RouteRefuse, reasons.SandboxUnavailable, reasons.SandboxStartFailed, "untrusted peers can only be answered in the sandbox"
		return d
	}
	if c.Backend == config.BackendOpenAI {
		// P3: no program, no sandbox; untrusted answers still count.
		d.Route, d.Counted, d.Why = RouteOpenAI, !trusted, "openai back-end"
		return d
	}
	if mode == config.ModeDirect {
		d.Route, d.Why = RouteDirect, "trusted peer, direct mode"
		return d
	}
	if c.Agent == config.AgentCursor {
		// E10: cursor cannot send its model requests through the node.
		d.Route, d.Refusal, d.Code, d.Why = RouteRefuse, reasons.SandboxUnavailable, reasons.AgentUnsupported, "cursor cannot run in the sandbox"
		return d
	}
	d.Route, d.Counted, d.Why = RouteSandbox, !trusted, "sandboxed exec"
	return d
}
