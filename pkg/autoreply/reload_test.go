package autoreply

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// heldSandbox passes the probe and holds each run until release is closed; it doneAnswers in
// Claude Code's JSON result format.
type heldSandbox struct {
	mu      sync.Mutex
	specs   []sandbox.Spec
	started chan struct{}
	release chan struct{}
}

func (h *heldSandbox) Probe(context.Context) (sandbox.ProbeResult, error) {
	return sandbox.ProbeResult{OK: true, Limits: sandbox.CgroupFull}, nil
}

func (h *heldSandbox) Start(_ context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (sandbox.Run, error) {
	h.mu.Lock()
	h.specs = append(h.specs, spec)
	h.mu.Unlock()
	h.started <- struct{}{}
	return heldRun{h: h, stdout: stdio.Stdout}, nil
}

func (h *heldSandbox) StopAll() {}

// heldRun ends when its sandbox's release is closed, having printed the answer.
type heldRun struct {
	h      *heldSandbox
	stdout io.Writer
}

func (r heldRun) Wait() sandbox.Outcome {
	<-r.h.release
	io.WriteString(r.stdout, `{"type":"result","subtype":"success","is_error":false,"result":"the answer"}`)
	return sandbox.Outcome{Cgroup: sandbox.CgroupFull}
}

func (r heldRun) Stop() {}

type recEndpoints struct {
	mu       sync.Mutex
	policies []egresswire.Policy
}

func (r *recEndpoints) Open(_ context.Context, p egresswire.Policy) (egresswire.OpenReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policies = append(r.policies, p)
	return egresswire.OpenReply{Socket: "/run/x/endpoint.sock", Placeholder: "placeholder-0123456789abcdef0123456789abcdef", Model: "m-" + p.Agent}, nil
}

func (r *recEndpoints) Close(context.Context, string) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

type noCompleter struct{}

func (noCompleter) Complete(context.Context, egresswire.CompleteRequest) (egresswire.CompleteReply, error) {
	return egresswire.CompleteReply{}, reasons.New(reasons.Internal, "not used")
}

type doneAnswers struct {
	mu      sync.Mutex
	replies map[string]string
	refused map[string]reasons.Code
	done    chan string
}

func (a *doneAnswers) Reply(_ context.Context, _, ix, text string) error {
	a.mu.Lock()
	a.replies[ix] = text
	a.mu.Unlock()
	a.done <- ix
	return nil
}

func (a *doneAnswers) Refuse(_ context.Context, _, ix string, code reasons.Code, _ time.Time) error {
	a.mu.Lock()
	a.refused[ix] = code
	a.mu.Unlock()
	a.done <- ix
	return nil
}

// U3: a reload while a turn runs changes nothing of that turn: it finishes with the agent,
// model and answer format it started with (here Claude Code's JSON, which the codex settings
// would not read), while the next turn starts with the new settings.
func TestReloadKeepsRunsInFlight(t *testing.T) {
	sb := &heldSandbox{started: make(chan struct{}, 4), release: make(chan struct{})}
	ep := &recEndpoints{}
	c := config.Default().AutoReply
	dir := t.TempDir()
	e, err := New(Options{
		Config: c, Sandbox: sb, Endpoints: ep, Completer: noCompleter{}, Ledger: testLedger(t),
		Dirs:     Dirs{SandboxWork: filepath.Join(dir, "ws"), DirectWork: filepath.Join(dir, "w"), RunRoot: filepath.Join(dir, "runs")},
		LookPath: func(name string) (string, error) { return "/opt/agents/" + name, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	ans := &doneAnswers{replies: map[string]string{}, refused: map[string]reasons.Code{}, done: make(chan string, 4)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go e.HandleTask(ctx, peer.Task{Peer: newAID(t), Interaction: "ix-old", Text: "hi"}, ans)
	select {
	case <-sb.started:
	case ix := <-ans.done:
		t.Fatalf("task %s answered before its run started: %v", ix, ans.refused)
	case <-ctx.Done():
		t.Fatal("the first run never started")
	}
	next := c
	next.Agent, next.Model = config.AgentCodex, "gpt-6"
	if err := e.Reload(Settings{Config: next}); err != nil {
		t.Fatal(err)
	}
	close(sb.release)
	if ix := <-ans.done; ix != "ix-old" || ans.replies["ix-old"] != "the answer" {
		t.Fatalf("the run in flight ended with %q / %v, want its answer read with the settings it started with", ans.replies["ix-old"], ans.refused)
	}
	go e.HandleTask(ctx, peer.Task{Peer: newAID(t), Interaction: "ix-new", Text: "hi"}, ans)
	<-sb.started
	<-ans.done
	sb.mu.Lock()
	defer sb.mu.Unlock()
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if got := []string{sb.specs[0].Argv[0], sb.specs[1].Argv[0]}; got[0] != "/opt/agents/claude" || got[1] != "/opt/agents/codex" {
		t.Fatalf("agents run = %v, want claude before the reload and codex after", got)
	}
	if ep.policies[0].Agent != "claude" || ep.policies[1].Agent != "codex" || ep.policies[1].Model != "gpt-6" {
		t.Fatalf("endpoint policies = %+v, want the new agent and model only for the new run", ep.policies)
	}
	// An invalid reload changes nothing.
	bad := next
	bad.Untrusted = "maybe"
	if err := e.Reload(Settings{Config: bad}); err == nil || e.current().Config.Untrusted != config.ModeSandbox {
		t.Fatalf("Reload(invalid) = %v, settings now %+v; want a refusal and the old settings", err, e.current().Config)
	}
}
