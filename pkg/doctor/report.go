package doctor

import (
	"fmt"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// Report is `anet doctor`: the host's checks (host.NAME), the configuration's as anetd --check
// gives them (config.NAME), the sandbox probe's (probe.NAME) and the node's (node.NAME: limits,
// agent, key, model, work disks, and the running node's helpers) in the shared check shape,
// with the probe's limits mechanism and warnings and the node's status beside them.
type Report struct {
	check.Report
	// Source says whose view the probe and node checks are: the running anetd's helpers, or
	// the helpers run here as anetd runs them when no anetd runs.
	Source string               `json:"source"`
	Limits sandbox.CgroupLimits `json:"limits,omitempty"`
	// Mechanism is how the limits are enforced (sandbox.ProbeResult.Mechanism).
	Mechanism string         `json:"mechanism,omitempty"`
	Warnings  []reasons.Code `json:"warnings,omitempty"`
	// Node is the running node's status, or nil with NodeError saying why there is none; a
	// node that is not running fails no check (the host and the probe are checked without one).
	Node      *control.Status `json:"node,omitempty"`
	NodeError string          `json:"node_error,omitempty"`
}

// ProbeChecks are the probe's checks as doctor reports them, or one failed check when the
// probe could not be run at all (anet-sandboxd missing, its output unreadable).
func ProbeChecks(p *sandbox.ProbeResult, err error) []check.Check {
	if err != nil || p == nil {
		detail := "no probe result"
		if err != nil {
			detail = err.Error()
		}
		return []check.Check{check.Fail("probe", "S7", "", detail)}
	}
	checks := p.Checks
	if !p.OK && (check.Report{Checks: checks}).Failed() == 0 {
		// A failed probe always explains itself in a check (sandbox.ProbeFailed).
		checks = append(checks, check.Fail(sandbox.CheckSandbox, "S7", p.Code, p.Detail))
	}
	return check.Prefixed("probe", checks)
}

// HelperChecks is one check per helper of the running node: it passes when the helper runs.
func HelperChecks(helpers []privsep.Status) []check.Check {
	var out []check.Check
	for _, h := range helpers {
		c := check.Check{Name: "node." + h.Name, Requirement: "C3", OK: h.State == privsep.StateRunning,
			Detail: fmt.Sprintf("%s (pid %d, restarts %d)", h.State, h.PID, h.Restarts)}
		switch {
		case h.State == privsep.StateUnresponsive:
			// N2: running but silent; treated as down until it answers or is restarted.
			c.Requirement, c.Code = "N2", reasons.HelperUnresponsive
			c.Detail = fmt.Sprintf("%s for %ds (pid %d, restarts %d)", h.State, h.UnresponsiveSeconds, h.PID, h.Restarts)
		case !c.OK:
			c.Code = reasons.HelperDown
			if h.LastError != "" {
				c.Detail += ": " + h.LastError
			}
		}
		out = append(out, c)
	}
	return out
}
