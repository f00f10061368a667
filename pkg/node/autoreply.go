package node

import (
	"context"
	"net/http"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/metrics"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
)

// NotInBuild is the code of a feature that was removed from this build (C5).
const NotInBuild reasons.Code = "not_in_build"

func init() {
	reasons.Register(reasons.Entry{Code: NotInBuild, Kind: reasons.KindNode,
		Text: "auto-reply is not in this build (built with -tags noautoreply); tasks wait in the inbox", Requirement: "C5"})
}

// autoReplier is the auto-reply engine as the node drives it; the node has none in a
// noautoreply build (autoreply_off.go) or when Options.Engine replaces it.
type autoReplier interface {
	peer.Engine
	status(ctx context.Context) (control.AutoReplyStatus, control.Budget, error)
	// budget is the day's budget alone, for the node's metrics: read on every scrape, it
	// probes nothing.
	budget(ctx context.Context) (*metrics.Budget, error)
	// test runs `anet autoreply test`; emit, when not nil, gets each stage as it happens.
	test(ctx context.Context, emit func(control.AutoReplyEvent)) control.AutoReplyTest
	// reload makes c and the work root the settings of turns that start from now on (U3).
	reload(c config.AutoReply, directWork string) error
	// agentProgram is c's agent program as a turn would start it (anet doctor).
	agentProgram(c config.AutoReply) (string, error)
	// doctorAgent fills v's agent checks for anet doctor: c's agent's interpreter as a
	// sandboxed turn would check it (E10), and, when probed (a sandbox can run), the agent and
	// that interpreter asked in a sandbox built like a turn's (S8), each with its refusal's
	// code. v.AgentPath is the agent's program.
	doctorAgent(ctx context.Context, c config.AutoReply, probed bool, v *control.DoctorView)
}

func (n *Node) autoReplyRoutes(s *control.Server) {
	test := func(r *http.Request, emit func(control.AutoReplyEvent)) (any, error) {
		if n.ar == nil {
			return nil, reasons.New(NotInBuild, "")
		}
		// A test turn may run as long as a real one (api_timeout_seconds) plus start-up.
		ctx, cancel := context.WithTimeout(r.Context(), n.config().AutoReply.APITimeout+time.Minute)
		defer cancel()
		return n.ar.test(ctx, emit), nil
	}
	s.Handle("POST", "/v1/autoreply/test", func(r *http.Request) (any, error) { return test(r, nil) })
	// The same, with each stage sent as it happens (S8: `anet autoreply test` shows progress).
	s.HandleStream("POST", "/v1/autoreply/test/stream", func(r *http.Request, emit func(any) error) (any, error) {
		return test(r, func(st control.AutoReplyEvent) { emit(st) })
	})
}

// fillAutoReply adds the engine's state and the real budget to st.
func (n *Node) fillAutoReply(st *control.Status) {
	st.AutoReply = control.AutoReplyStatus{Active: []control.ActiveRun{}, Reasons: []control.ReasonCount{}}
	if n.ar == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ar, b, err := n.ar.status(ctx)
	if err != nil {
		n.log.Warn("auto-reply status", "err", err)
		st.Warnings = append(st.Warnings, control.Warning{Code: string(reasons.Internal), Text: reasons.Text(reasons.Internal), Detail: "auto-reply status: " + err.Error()})
		return
	}
	st.AutoReply, st.Budget = ar, b
	if ar.Sandbox.Probed && !ar.Sandbox.OK && ar.Sandbox.Code != "" {
		st.Warnings = append(st.Warnings, control.Warning{Code: ar.Sandbox.Code, Text: reasons.Text(reasons.Code(ar.Sandbox.Code)), Detail: ar.Sandbox.Detail})
	}
	if ar.Sandbox.Limits == string(reasons.NoCgroupLimits) {
		st.Warnings = append(st.Warnings, control.Warning{Code: string(reasons.NoCgroupLimits), Text: reasons.Text(reasons.NoCgroupLimits)})
	}
}
