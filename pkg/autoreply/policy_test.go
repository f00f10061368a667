package autoreply

import (
	"testing"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/reasons"
)

func TestDecide(t *testing.T) {
	base := config.Default().AutoReply
	with := func(f func(*config.AutoReply)) config.AutoReply {
		c := base
		f(&c)
		return c
	}
	for _, c := range []struct {
		name    string
		cfg     config.AutoReply
		trusted bool
		want    Decision
	}{
		// P1: an untrusted peer with untrusted: sandbox gets the sandbox, and counts (B1).
		{"P1 untrusted sandbox", base, false, Decision{Route: RouteSandbox, Untrusted: true, Counted: true}},
		// P4: trusted peers run direct by default, not counted, no slot.
		{"P4 trusted direct default", base, true, Decision{Route: RouteDirect}},
		// P1/P4: trusted = sandbox applies the sandbox to trusted peers too, still not counted.
		{"P4 trusted sandbox", with(func(c *config.AutoReply) { c.Trusted = config.ModeSandbox }), true, Decision{Route: RouteSandbox}},
		{"untrusted off", with(func(c *config.AutoReply) { c.Untrusted = config.ModeOff }), false, Decision{Route: RouteOff, Untrusted: true, Code: AutoReplyOff}},
		{"trusted off", with(func(c *config.AutoReply) { c.Trusted = config.ModeOff }), true, Decision{Route: RouteOff, Code: AutoReplyOff}},
		// P2: a Config that skipped validation cannot run an untrusted peer outside the sandbox.
		{"P2 untrusted direct refused", with(func(c *config.AutoReply) { c.Untrusted = config.ModeDirect }), false,
			Decision{Route: RouteRefuse, Untrusted: true, Refusal: reasons.SandboxUnavailable, Code: reasons.SandboxStartFailed}},
		// P3: the openai back-end uses no sandbox but counts for untrusted peers.
		{"P3 openai untrusted", with(func(c *config.AutoReply) { c.Backend = config.BackendOpenAI }), false, Decision{Route: RouteOpenAI, Untrusted: true, Counted: true}},
		{"P3 openai trusted", with(func(c *config.AutoReply) { c.Backend = config.BackendOpenAI }), true, Decision{Route: RouteOpenAI}},
		{"openai off stays off", with(func(c *config.AutoReply) { c.Backend = config.BackendOpenAI; c.Untrusted = config.ModeOff }), false, Decision{Route: RouteOff, Untrusted: true, Code: AutoReplyOff}},
		// E10: cursor cannot run in the sandbox: the requester gets sandbox_unavailable (F1),
		// the operator agent_unsupported.
		{"E10 cursor sandbox", with(func(c *config.AutoReply) { c.Agent = config.AgentCursor }), false,
			Decision{Route: RouteRefuse, Untrusted: true, Refusal: reasons.SandboxUnavailable, Code: reasons.AgentUnsupported}},
		{"E10 cursor direct allowed", with(func(c *config.AutoReply) { c.Agent = config.AgentCursor }), true, Decision{Route: RouteDirect}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(c.cfg, c.trusted)
			got.Why = ""
			if got != c.want {
				t.Fatalf("Decide(%s) = %+v, want %+v", c.name, got, c.want)
			}
		})
	}
}
