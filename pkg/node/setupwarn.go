//go:build !noautoreply

package node

import (
	"context"
	"time"

	"anet.dev/anet/pkg/autoreply"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/preflight"
)

// warnSetup says at start, once the helpers run, what keeps auto-reply from answering: the
// configured agent not on anetd's PATH, or a run that anet-egress could not open (no key, no
// api_base, no model: F1, F2). Turns are still refused one by one with these reasons; this is
// the operator's first sight of them, without waiting for a task.
func (n *Node) warnSetup(ctx context.Context) {
	if n.ar == nil {
		return
	}
	c := n.config().AutoReply
	if c.Trusted == config.ModeOff && c.Untrusted == config.ModeOff {
		return
	}
	n.waitHelpers(ctx)
	if c.Backend == config.BackendExec {
		if _, err := n.ar.agentProgram(c); err != nil {
			n.log.Warn("auto-reply cannot start the configured agent; sandboxed turns are refused with sandbox_unavailable until it is installed",
				"code", autoreply.AgentMissing, "agent", c.Agent, "err", err.Error())
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rv preflight.RunVerdict
	if _, err := n.egress.Call(cctx, preflight.MethodCheckRun, preflight.QueryFor(c), &rv); err != nil {
		n.log.Warn("auto-reply: anet-egress could not check a run", "err", err.Error())
		return
	}
	if !rv.OK {
		n.log.Warn("auto-reply cannot open a run's model endpoint; turns are refused with sandbox_unavailable until this is fixed",
			"code", rv.Code, "detail", rv.Message)
	}
}
