//go:build !noautoreply

package node

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"

	"anet.dev/anet/pkg/autoreply"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/metrics"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox/remote"
)

// startAutoReply builds the auto-reply engine over the two helpers, unless Options.Engine
// already names one. It must run after startHelpers and before startPeers.
func (n *Node) startAutoReply(ctx context.Context) error {
	if n.opts.Engine != nil {
		return nil
	}
	e, err := autoreply.New(autoreply.Options{
		Config: n.config().AutoReply,
		Dirs: autoreply.Dirs{
			SandboxWork: n.paths.SandboxWorkRoot(),
			DirectWork:  n.paths.WorkRoot(n.config()),
			RunRoot:     filepath.Join(n.paths.CacheDir, "runs"),
			Hidden:      []string{n.paths.DataDir, n.paths.RuntimeDir, n.paths.ConfigDir, n.paths.RunLogs()},
			RunLogs:     n.paths.RunLogs(),
		},
		Sandbox:   remote.NewClient(n.sandboxd),
		Endpoints: egressClient{n.egress},
		Completer: egressClient{n.egress},
		Ledger:    autoreply.Ledger{Store: n.store, Signer: n.id},
		Log:       n.log,
		Ready:     n.waitHelpers,
		Observer:  n.metrics,
		Wall:      n.wallVerdict,
	})
	if err != nil {
		return err
	}
	go e.SweepWork(ctx)
	ar := engineAdapter{e}
	n.ar = ar
	n.opts.Engine = ar
	return nil
}

// egressClient calls anet-egress: per-run endpoints and the openai back-end's completion.
type egressClient struct{ sup *privsep.Supervisor }

func (c egressClient) Open(ctx context.Context, p egresswire.Policy) (egresswire.OpenReply, error) {
	var out egresswire.OpenReply
	_, err := c.sup.Call(ctx, egresswire.MethodOpen, egresswire.OpenRequest{Policy: p}, &out)
	return out, err
}

func (c egressClient) Close(ctx context.Context, runID string) (json.RawMessage, error) {
	var out egresswire.CloseReply
	_, err := c.sup.Call(ctx, egresswire.MethodClose, egresswire.CloseRequest{RunID: runID}, &out)
	return out.Usage, err
}

// Usage is an open endpoint's usage so far (a run's progress).
func (c egressClient) Usage(ctx context.Context, runID string) (json.RawMessage, error) {
	var out egresswire.CloseReply
	_, err := c.sup.Call(ctx, egresswire.MethodUsage, egresswire.CloseRequest{RunID: runID}, &out)
	return out.Usage, err
}

func (c egressClient) Complete(ctx context.Context, req egresswire.CompleteRequest) (egresswire.CompleteReply, error) {
	var out egresswire.CompleteReply
	_, err := c.sup.Call(ctx, egresswire.MethodComplete, req, &out)
	return out, err
}

// engineAdapter turns the engine's state into the control API's documents.
type engineAdapter struct{ *autoreply.Engine }

func (a engineAdapter) status(ctx context.Context) (control.AutoReplyStatus, control.Budget, error) {
	st, err := a.Engine.Status(ctx)
	if err != nil {
		return control.AutoReplyStatus{}, control.Budget{}, err
	}
	out := control.AutoReplyStatus{
		Compiled: true, Backend: st.Backend, Agent: st.Agent, Trusted: st.Trusted, Untrusted: st.Untrusted,
		RunsActive: len(st.Active), Active: []control.ActiveRun{}, Reasons: []control.ReasonCount{},
		Sandbox: control.SandboxState{Probed: st.Sandbox.Probed, OK: st.Sandbox.OK, Code: string(st.Sandbox.Code), Detail: st.Sandbox.Detail, Limits: st.Sandbox.Limits, Tier: st.Sandbox.Tier, Mechanism: st.Sandbox.Mechanism, At: st.Sandbox.At},
	}
	for _, r := range st.Active {
		out.Active = append(out.Active, control.ActiveRun{Run: r.Run, Peer: r.Peer, Interaction: r.Interaction, Route: string(r.Route), Started: r.Started})
	}
	for _, ev := range st.Events {
		out.Reasons = append(out.Reasons, control.ReasonCount{Code: string(ev.Code), Text: reasons.Text(ev.Code), Count: ev.Count, Last: ev.Last, Detail: ev.Detail})
	}
	u := st.Budget
	b := control.Budget{RunsToday: u.RunsToday, RunsPerDay: u.Limits.PerDay, RunsPerPeerPerDay: u.Limits.PerPeer, Left: u.Left, DayEnds: u.DayEnds, DayStarts: u.DayStart, InFlight: u.InFlight}
	b.Spend = control.SpendBudget{Spent: u.Spend.Spent, InFlight: u.Spend.InFlight, Left: u.Spend.Left, Peers: []control.PeerSpend{}}
	if c := u.Limits.Spend; c != nil {
		b.Spend.PerDay, b.Spend.PerPeerPerDay = c.PerDay, c.PerPeer
	}
	for _, p := range u.Spend.Peers {
		b.Spend.Peers = append(b.Spend.Peers, control.PeerSpend{Peer: p.Peer, Spent: p.Spent, InFlight: p.InFlight, Left: p.Left})
	}
	return out, b, nil
}

// budget is the day's budget for the node's metrics (B1, B6, K2).
func (a engineAdapter) budget(ctx context.Context) (*metrics.Budget, error) {
	u, err := a.Engine.Budget(ctx)
	if err != nil {
		return nil, err
	}
	b := &metrics.Budget{RunsToday: u.RunsToday, RunsInFlight: u.InFlight, RunsLeft: u.Left, RunsPerDay: u.Limits.PerDay}
	if c := u.Limits.Spend; c != nil {
		s := &metrics.Spend{Spent: int64(u.Spend.Spent), InFlight: int64(u.Spend.InFlight), Left: int64(u.Spend.Left), PerDay: int64(c.PerDay), PerPeer: int64(c.PerPeer)}
		for _, p := range u.Spend.Peers {
			s.Peers = append(s.Peers, metrics.PeerSpend{Peer: p.Peer, Spent: int64(p.Spent), InFlight: int64(p.InFlight), Left: int64(p.Left)})
		}
		b.Spend = s
	}
	return b, nil
}

func (a engineAdapter) agentProgram(c config.AutoReply) (string, error) {
	return a.Engine.AgentProgram(c)
}

func (a engineAdapter) doctorAgent(ctx context.Context, c config.AutoReply, probed bool, v *control.DoctorView) {
	found, err := a.Engine.AgentRuntime(ctx, c)
	if err != nil {
		v.AgentRuntimeCode, err = forDoctor(err)
		v.AgentRuntimeError = err.Error()
		return
	}
	if found.Program != "" {
		v.AgentRuntime = found.Program + " " + found.Version
	}
	// A passing --version on the host says nothing about the run: ask where a stranger's
	// turn runs. The openai back-end starts no program.
	if !probed || c.Backend != config.BackendExec {
		return
	}
	av, rv, err := a.Engine.AgentInSandbox(ctx, c, found)
	switch {
	case err != nil:
		// The run's own code (the sandbox could not start it, its helper is down), or the
		// agent's failure there.
		code := reasons.CodeOf(err)
		if code == "" {
			code = reasons.AgentFailsInSandbox
		}
		_, err = forDoctor(err)
		v.AgentSandboxError, v.AgentSandboxCode = err.Error(), code
	case rv != "":
		v.AgentSandbox = av + ", runtime " + rv
	default:
		v.AgentSandbox = av
	}
}

// forDoctor splits an agent check's error into its code and its detail: doctor prints the
// code's sentence itself.
func forDoctor(err error) (reasons.Code, error) {
	code := autoreply.RuntimeCode(err)
	var re *reasons.Error
	if errors.As(err, &re) {
		err = errors.New(re.Detail)
	}
	return code, err
}

func (a engineAdapter) reload(c config.AutoReply, directWork string) error {
	return a.Engine.Reload(autoreply.Settings{Config: c, DirectWork: directWork})
}

func (a engineAdapter) test(ctx context.Context, emit func(control.AutoReplyEvent)) control.AutoReplyTest {
	var progress func(autoreply.TestEvent)
	if emit != nil {
		progress = func(ev autoreply.TestEvent) { emit(control.AutoReplyEvent{Check: ev.Check, Progress: ev.Progress}) }
	}
	r := a.Engine.Test(ctx, progress)
	return control.AutoReplyTest{Report: r.Report, Trusted: r.Trusted, Route: string(r.Route), Answer: r.Answer, Counted: r.Counted, RunLog: r.RunLog}
}
