package autoreply

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// seatbeltLike is a Launcher and an endpoint service shaped like the macOS backend: its
// probe says runs share the host's loopback and see host paths, its endpoint listens on a
// loopback port, and its Start records the spec and refuses as told.
type seatbeltLike struct {
	mu       sync.Mutex
	shape    sandbox.RunShape
	policies []egresswire.Policy
	specs    []sandbox.Spec
	startErr error
}

func (s *seatbeltLike) Probe(context.Context) (sandbox.ProbeResult, error) {
	return sandbox.ProbeResult{OK: true, Shape: s.shape, Limits: sandbox.CgroupNone}, nil
}

func (s *seatbeltLike) Start(_ context.Context, spec sandbox.Spec, _ sandbox.Stdio) (sandbox.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs = append(s.specs, spec)
	return nil, s.startErr
}

func (s *seatbeltLike) StopAll() {}

func (s *seatbeltLike) Open(_ context.Context, p egresswire.Policy) (egresswire.OpenReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies = append(s.policies, p)
	r := egresswire.OpenReply{Placeholder: strings.Repeat("ab", 32), Model: "claude-haiku-5-5"}
	if p.Listen == egresswire.ListenLoopback {
		r.Addr = "127.0.0.1:49733"
	} else {
		r.Socket = "/run/user/1/anet/runs/" + p.RunID + "/endpoint.sock"
	}
	return r, nil
}

func (s *seatbeltLike) Close(context.Context, string) (json.RawMessage, error) { return nil, nil }

// M1: a backend whose runs share the host's loopback and file system (Seatbelt) gets an
// endpoint on a loopback port, the spec names that address and port, and the agent is
// pointed at it, with the proxy credentials and the run's host dirs; a namespaced backend's
// turn is unchanged. A self-check that fails before the turn refuses it with
// sandbox_unavailable, and status shows the failed item.
func TestTurnFollowsTheBackendShapeM1(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape sandbox.RunShape
	}{
		{"namespaced", sandbox.RunShape{}},
		{"seatbelt", sandbox.RunShape{Endpoint: sandbox.EndpointLoopback, HostPaths: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			sb := &seatbeltLike{shape: tc.shape, startErr: reasons.New(reasons.SelfCheckFailed, "decoy_port: connected to 127.0.0.1:50001")}
			cfg := config.Default().AutoReply
			cfg.Backend, cfg.Untrusted, cfg.Agent = config.BackendExec, config.ModeSandbox, "claude"
			root := t.TempDir()
			dirs := Dirs{SandboxWork: filepath.Join(root, "work-sandbox"), DirectWork: filepath.Join(root, "work"), RunRoot: filepath.Join(root, "runs")}
			e, err := New(Options{Config: cfg, Dirs: dirs, Sandbox: sb, Endpoints: sb, Completer: &completer{}, Ledger: testLedger(t),
				LookPath: func(string) (string, error) { return "/opt/agents/bin/claude", nil }})
			if err != nil {
				t.Fatal(err)
			}
			a := newAID(t)
			ans := &answers{}
			e.HandleTask(ctx, peer.Task{Peer: a, Interaction: "ix-1", Text: "hi"}, ans)
			if len(ans.refused) != 1 || ans.refused[0] != reasons.SandboxUnavailable {
				t.Fatalf("answers = %+v, want sandbox_unavailable", ans)
			}
			if len(sb.specs) != 1 || len(sb.policies) != 1 {
				t.Fatalf("%d specs, %d policies, want one each", len(sb.specs), len(sb.policies))
			}
			spec, pol := sb.specs[0], sb.policies[0]
			env := strings.Join(spec.Env, "\n")
			if tc.shape.Endpoint == sandbox.EndpointLoopback {
				home, tmp, work := sandbox.HostRunDirs(spec)
				if pol.Listen != egresswire.ListenLoopback || spec.EndpointAddr != "127.0.0.1:49733" || spec.Port != 49733 || spec.Endpoint != "" {
					t.Fatalf("policy listen %q, spec endpoint %q addr %q port %d; want loopback, 127.0.0.1:49733", pol.Listen, spec.Endpoint, spec.EndpointAddr, spec.Port)
				}
				if work != filepath.Join(dirs.SandboxWork, a, "ix-1") {
					t.Errorf("work dir = %s, want the sandbox work root's", work)
				}
				for _, want := range []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:49733", "HTTPS_PROXY=http://anet:" + strings.Repeat("ab", 32) + "@127.0.0.1:49733", "CLAUDE_CODE_TMPDIR=" + tmp} {
					if !strings.Contains(env, want) {
						t.Errorf("agent env lacks %s:\n%s", want, env)
					}
				}
				if !strings.HasPrefix(home, dirs.RunRoot) || !strings.HasPrefix(tmp, dirs.RunRoot) {
					t.Errorf("home %s, tmp %s: want them under the run root %s", home, tmp, dirs.RunRoot)
				}
			} else {
				if pol.Listen != "" || spec.Endpoint == "" || spec.EndpointAddr != "" || spec.Port != SandboxPort || !strings.Contains(env, "HTTPS_PROXY=http://127.0.0.1:"+strconv.Itoa(SandboxPort)+"\n") || strings.Contains(env, "anet:") {
					t.Fatalf("namespaced turn: listen %q, endpoint %q, addr %q, port %d, env %s", pol.Listen, spec.Endpoint, spec.EndpointAddr, spec.Port, env)
				}
			}
		})
	}
	// The failed item reaches the operator: status shows the sandbox down with it.
	sb := &seatbeltLike{shape: sandbox.RunShape{Endpoint: sandbox.EndpointLoopback, HostPaths: true},
		startErr: reasons.New(reasons.SelfCheckFailed, "decoy_port: connected to 127.0.0.1:50001")}
	cfg := config.Default().AutoReply
	cfg.Backend, cfg.Untrusted, cfg.Agent = config.BackendExec, config.ModeSandbox, "claude"
	root := t.TempDir()
	e, err := New(Options{Config: cfg, Dirs: Dirs{SandboxWork: filepath.Join(root, "ws"), DirectWork: filepath.Join(root, "w"), RunRoot: filepath.Join(root, "r")},
		Sandbox: sb, Endpoints: sb, Completer: &completer{}, Ledger: testLedger(t),
		LookPath: func(string) (string, error) { return "/opt/agents/bin/claude", nil }})
	if err != nil {
		t.Fatal(err)
	}
	e.HandleTask(context.Background(), peer.Task{Peer: newAID(t), Interaction: "ix-2", Text: "hi"}, &answers{})
	e.mu.Lock()
	p := e.probe
	ev := e.events[reasons.SelfCheckFailed]
	e.mu.Unlock()
	if p == nil || p.OK || p.Code != reasons.SelfCheckFailed || !strings.Contains(p.Detail, "decoy_port") {
		t.Fatalf("sandbox state after the failed self-check = %+v, want selfcheck_failed naming decoy_port", p)
	}
	if ev == nil || !strings.Contains(ev.Detail, "decoy_port") {
		t.Fatalf("status event = %+v, want selfcheck_failed with the item", ev)
	}
}
