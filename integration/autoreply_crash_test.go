package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
)

// B7, B5: kill -9 B while the agent runs: that turn has no completion and is not counted
// after the restart; the task, still new, runs again and is counted once.
func TestAutoReplyKill9DuringRunNotCounted(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec})
	a, aidA, aidB := startPair(t, b)
	// HOLD: the first run of this interaction sleeps after its model call.
	id := send(t, a, aidB, "HOLD then answer")
	held := filepath.Join(b.path("cache", "anet", "work-sandbox", aidA, id), "held")
	testkit.WaitFor(t, "the agent is running", func() bool { _, err := os.Stat(held); return err == nil })
	if st := b.status(); st.AutoReply.RunsActive != 1 || st.Budget.InFlight != 1 || st.Budget.Left != 19 {
		t.Fatalf("B's status during the run = %+v / %+v, want 1 active, in flight, 19 left", st.AutoReply, st.Budget)
	}
	b.kill9()
	b.arStart()
	if ans := answerAt(t, a, id); ans.Type != "reply" || !strings.Contains(ans.Text, "HOLD then answer") {
		t.Fatalf("A's answer after B's restart = %+v, want the second run's reply", ans)
	}
	if st := b.status(); st.Budget.RunsToday != 1 {
		t.Fatalf("runs today = %d, want 1: the turn cut by kill -9 must not count (B7)", st.Budget.RunsToday)
	}
	if s, c := evidence(t, b, "turn_started"), evidence(t, b, "run_counted"); len(s) != 2 || len(c) != 1 {
		t.Fatalf("B's chain: %d turn_started, %d run_counted, want 2 and 1", len(s), len(c))
	}
	b.mustAnet("evidence", "verify")
}

// P3, B1, K1: the openai back-end answers with one chat completion made by anet-egress (pinned
// model, store:false, cap); no agent starts; the answer counts for an untrusted peer.
func TestAutoReplyOpenAIBackend(t *testing.T) {
	f := newARFake(t, t.TempDir(), "gpt-6-luna")
	b := newARNode(t, f, arOptions{autoReply: "  backend: openai\n  untrusted: sandbox\n", keys: "openai: " + f.key + "\n"})
	a, aidA, aidB := startPair(t, b)
	id := send(t, a, aidB, "say hello")
	if ans := answerAt(t, a, id); ans.Type != "reply" || ans.Text != "hello" {
		t.Fatalf("A's answer = %+v, want the model's reply", ans)
	}
	reqs := f.up.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
		t.Fatalf("upstream requests = %+v, want one chat completion", reqs)
	}
	body, err := decodeBody(reqs[0].Body)
	if err != nil || body["store"] != false || body["model"] != "gpt-6-luna" {
		t.Fatalf("chat completion body = %v (%v), want store false and the pinned model", body, err)
	}
	if n, ok := jsonInt(body["max_completion_tokens"]); !ok || n != 8192 {
		t.Fatalf("max_completion_tokens = %v, want 8192", body["max_completion_tokens"])
	}
	if p := f.up.Problems(); len(p) > 0 {
		t.Fatalf("upstream problems: %v", p)
	}
	if _, err := os.Stat(b.path("cache", "anet", "work-sandbox", aidA)); err == nil {
		t.Fatal("the openai back-end made a work dir: it must start no program (P3)")
	}
	if st := b.status(); st.Budget.RunsToday != 1 {
		t.Fatalf("runs today = %d, want 1 (an untrusted openai answer counts, P3)", st.Budget.RunsToday)
	}
	// K1: metered like an agent's request: the fake's 3 input and 1 output tokens cost
	// 3×0.10 + 1×0.50 = 0.8 µ at gpt-6-luna, charged as 1 (rounded up, never down).
	checkRunCost(t, b, 1, 1, map[string]float64{"input": 3, "output": 1})
}

// C5: the noautoreply build starts, keeps tasks in the inbox, and says so; its CLI says the
// feature is not in this build.
func TestNoAutoReplyBuild(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec, bin: "anetd-noautoreply"})
	a, _, aidB := startPair(t, b)
	id := send(t, a, aidB, "anyone there?")
	testkit.WaitFor(t, "task in B's inbox", func() bool { return len(b.inbox()) == 1 })
	st := b.status()
	if st.AutoReply.Compiled {
		t.Fatalf("status auto_reply = %+v, want compiled false", st.AutoReply)
	}
	// The daemon has no engine: the test route names the build, and nothing ever runs.
	if _, errOut, err := b.anet("autoreply", "test"); err == nil || !strings.Contains(errOut, "not_in_build") {
		t.Fatalf("anet autoreply test against a noautoreply anetd = %v, %q, want not_in_build", err, errOut)
	}
	if l := b.inbox(); l[0].Interaction != id || l[0].State != "new" || len(evidence(t, b, "turn_started")) != 0 || len(f.up.Requests()) != 0 {
		t.Fatalf("B's inbox = %+v: the task must stay new and nothing run", l)
	}
	cmd := exec.Command(testharness.Bin(t, "anet-noautoreply"), "autoreply", "show")
	cmd.Env = b.env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "auto-reply is not in this build") {
		t.Fatalf("anet (noautoreply) autoreply show = %q, %v, want the not-in-build message", out, err)
	}
	if out := b.mustAnet("status"); !strings.Contains(out, "not in this build") {
		t.Fatalf("anet status = %q, want auto-reply not in this build", out)
	}
}

// An agent that ran but failed: the requester learns no answer is coming (turn_failed); the
// run happened and cost a model call, so it counts (B1); the operator sees no_answer.
func TestAutoReplyAgentFailureRefusedAndCounted(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec})
	a, aidA, aidB := startPair(t, b)
	id := send(t, a, aidB, "please FAIL")
	ans := answerAt(t, a, id)
	if ans.Type != "refusal" || ans.Code != "turn_failed" {
		t.Fatalf("A's answer = %+v, want refusal turn_failed", ans)
	}
	st := b.status()
	found := false
	for _, r := range st.AutoReply.Reasons {
		found = found || r.Code == "no_answer"
	}
	if !found || st.Budget.RunsToday != 1 || len(f.up.Requests()) != 1 {
		t.Fatalf("B's status = %+v / %+v, want no_answer and 1 run counted", st.AutoReply.Reasons, st.Budget)
	}
	if c := evidence(t, b, "turn_completed"); len(c) != 1 || details(t, c[0])["reason"] != "no_answer" || details(t, c[0])["exit_code"] != float64(1) {
		t.Fatalf("turn_completed = %+v, want reason no_answer and exit code 1", c)
	}
	tok, err := os.ReadFile(b.path("cache", "anet", "work-sandbox", aidA, id, "token"))
	if err != nil || len(tok) < 32 {
		t.Fatalf("the agent's token copy: %q, %v", tok, err)
	}
	chain := b.mustAnet("evidence", "show", "--json")
	if strings.Contains(b.logs.String(), string(tok)) || strings.Contains(chain, string(tok)) || !strings.Contains(chain, "[placeholder]") {
		t.Fatal("the run's placeholder token reached anetd's log or evidence chain")
	}
	// S8: the run's own log, kept with the work dirs, is shown by anet show: how the run
	// ended and the agent's standard error, with the token masked.
	show := b.mustAnet("show", id)
	for _, want := range []string{"log of run r", "  | exit_code: 1", "  | failing with token [placeholder]", "model calls: 1 model request(s) forwarded: upstream 200×1"} {
		if !strings.Contains(show, want) {
			t.Errorf("anet show lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, string(tok)) {
		t.Fatal("the run's log shows the run's token")
	}
}

// S8: anet autoreply test prints each stage as it happens, and a failed model call names its
// cause from the run (here: nothing listens where the model service is), with the run's log.
func TestAutoReplyTestNamesTheCause(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec})
	b.arStart()
	f.up.Close() // the model service is gone: every upstream request fails to connect
	out, _, err := b.anet("autoreply", "test")
	if err == nil {
		t.Fatalf("anet autoreply test with the model service down succeeded:\n%s", out)
	}
	for _, want := range []string{
		"ok   probe", "ok   endpoint", "...  run          agent started",
		"FAIL model_call   [E1] model_call_failed (", "1 of 1 upstream requests failed:", "connection refused",
		"the run's log: ", "result: failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("anet autoreply test output lacks %q:\n%s", want, out)
		}
	}
	i := strings.Index(out, "the run's log: ")
	if i >= 0 {
		p := strings.TrimSpace(strings.SplitN(out[i+len("the run's log: "):], "\n", 2)[0])
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), "model call failure: 1 of 1 upstream requests failed") {
			t.Errorf("the run's log %s = %q, %v", p, b, err)
		}
	}
}
