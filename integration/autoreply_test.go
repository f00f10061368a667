package integration

// Auto-reply end to end: real anetd, anet-sandboxd (bwrap), anet-egress (test build
// with the loopback redirect), a fake model service over real TLS, and the test agent as
// `claude`. Requirements: P1–P4, B1–B7, E10, F1, F2, S8, C5.

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"anet.dev/anet/pkg/control"
)

const sandboxExec = "  backend: exec\n  agent: claude\n  untrusted: sandbox\n  api_timeout_seconds: 60\n"

// P1, E1, B1, S8: A (untrusted at B) sends a task; B runs the test agent in the sandbox; the
// agent calls the model through its endpoint; A receives the answer. The turn counts; an
// `anet autoreply test` and a trusted peer's sandboxed turn do not.
func TestAutoReplySandboxedExecEndToEnd(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec + "  trusted: sandbox\n"})
	a, aidA, aidB := startPair(t, b)

	id := send(t, a, aidB, "what is 6*7? $(id) \"quoted\"")
	ans := answerAt(t, a, id)
	want := "model " + arPinned + " says hello to: what is 6*7? $(id) \"quoted\""
	if ans.Type != "reply" || ans.Text != want {
		t.Fatalf("A's answer = %+v, want the reply %q", ans, want)
	}
	// The agent ran in B's sandbox work dir for this interaction (S3) and its one model
	// request reached the upstream pinned and capped.
	if _, err := os.Stat(b.path("cache", "anet", "work-sandbox", aidA, id, "started")); err != nil {
		t.Fatalf("the agent's marker is not in the sandboxed work dir: %v", err)
	}
	if reqs := f.up.Requests(); len(reqs) != 1 || reqs[0].Path != "/v1/messages" {
		t.Fatalf("upstream requests = %d, want the agent's one /v1/messages", len(reqs))
	}
	if p := f.up.Problems(); len(p) > 0 {
		t.Fatalf("upstream saw rule violations: %v", p)
	}
	st := b.status()
	if st.Budget.RunsToday != 1 || st.Budget.Left != 19 || !st.AutoReply.Compiled || st.AutoReply.RunsActive != 0 {
		t.Fatalf("B's status budget = %+v, auto_reply = %+v, want 1 run counted, 19 left", st.Budget, st.AutoReply)
	}
	// S6: status names the mechanism the limits are enforced by, and it agrees with them.
	sb := st.AutoReply.Sandbox
	switch {
	case sb.Limits == "full" && (sb.Mechanism == "cgroup v1 delegated" || sb.Mechanism == "cgroup v2 delegated" || sb.Mechanism == "systemd scope"):
	case sb.Limits == "no_cgroup_limits" && sb.Mechanism == "none":
	default:
		t.Fatalf("B's sandbox state = %+v, want full by a named mechanism, or no_cgroup_limits by none", sb)
	}
	started, completed, counted := evidence(t, b, "turn_started"), evidence(t, b, "turn_completed"), evidence(t, b, "run_counted")
	if len(started) != 1 || len(completed) != 1 || len(counted) != 1 || details(t, completed[0])["counted"] != true || started[0].Seq > completed[0].Seq {
		t.Fatalf("B's chain: %d turn_started, %d turn_completed, %d run_counted, want one counted turn", len(started), len(completed), len(counted))
	}

	// S8: the self-test goes through probe, endpoint, sandbox, model and answer, and is not
	// counted (B1).
	var rep control.AutoReplyTest
	out := b.mustAnet("autoreply", "test", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, s := range rep.Checks {
		names = append(names, s.Name)
	}
	if !rep.OK || rep.Counted || rep.Route != "sandbox" || !strings.Contains(rep.Answer, "says hello") || strings.Join(names, ",") != "policy,agent,probe,endpoint,agent_config,run,answer,model_call" {
		t.Fatalf("anet autoreply test = %s, want every stage ok", out)
	}
	if human := b.mustAnet("autoreply", "test"); !strings.Contains(human, "result: ok") || !strings.Contains(human, "model_call") {
		t.Fatalf("anet autoreply test = %q", human)
	}
	// P4 with trusted = sandbox: A trusted at B runs sandboxed and is not counted (B1).
	b.mustAnet("trust", "add", aidA)
	id2 := send(t, a, aidB, "trusted question")
	if ans := answerAt(t, a, id2); ans.Type != "reply" || !strings.Contains(ans.Text, "trusted question") {
		t.Fatalf("trusted answer = %+v", ans)
	}
	if st := b.status(); st.Budget.RunsToday != 1 {
		t.Fatalf("runs today after a test run and a trusted turn = %d, want still 1", st.Budget.RunsToday)
	}
	if c := evidence(t, b, "turn_completed"); len(c) != 2 || details(t, c[1])["counted"] != false {
		t.Fatalf("trusted turn's completion = %+v, want counted false", c)
	}
	if out := b.mustAnet("status"); !strings.Contains(out, "1 of 20 untrusted runs used today") {
		t.Fatalf("anet status = %q, want the auto-reply lines with 1 of 20 runs used today", out)
	}
	b.mustAnet("evidence", "verify")
}

// P4, S3: a trusted peer in direct mode (the default) runs the agent as the operator, in the
// unsandboxed work root, without an endpoint, and is not counted (B1).
func TestAutoReplyTrustedDirect(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec})
	a, aidA, aidB := startPair(t, b)
	b.mustAnet("trust", "add", aidA)
	id := send(t, a, aidB, "trusted direct task")
	ans := answerAt(t, a, id)
	work := b.path("cache", "anet", "work", aidA, id)
	if ans.Type != "reply" || ans.Text != "direct in "+work+": trusted direct task" {
		t.Fatalf("A's answer = %+v, want the direct run's reply from %s", ans, work)
	}
	if _, err := os.Stat(b.path("cache", "anet", "work-sandbox", aidA)); err == nil {
		t.Fatal("a direct run used the sandboxed work root (S3: the roots never mix)")
	}
	if len(f.up.Requests()) != 0 {
		t.Fatal("a direct run went through the node's endpoint")
	}
	if st := b.status(); st.Budget.RunsToday != 0 {
		t.Fatalf("runs today = %d, want 0: trusted turns are not counted", st.Budget.RunsToday)
	}
	if c := evidence(t, b, "turn_completed"); len(c) != 1 || details(t, c[0])["mode"] != "direct" || details(t, c[0])["counted"] != false {
		t.Fatalf("turn_completed = %+v, want one direct, uncounted", c)
	}
}
