package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// chatAgentTimeout is the real agents' wall clock (api_timeout_seconds) in these tests.
const chatAgentTimeout = 240 * time.Second

// chatAgentCase is one real agent that reaches the operator's api_base service as an
// OpenAI-compatible Chat Completions provider (E10).
type chatAgentCase struct {
	agent, answer string
	// extra is more YAML for the auto_reply section (the agent's runtime).
	extra string
}

// runRealChatAgent runs agent for real in B's sandbox against chatFake as the operator's
// api_base (test CA through SSL_CERT_FILE), with the model priced and capped below 8192 in
// the models override, and checks, per E1–E4, E10, K1, S5, F3: the reply is exactly the
// model's text; the operator's key reached the upstream on every request and nowhere else;
// the placeholder was set in the sandbox and never reached the upstream; the model was the
// pinned one and the output cap the model's; the scripted tool call ran in /work; the run
// was counted once at the models file's prices; nothing of the run is left in the run root.
func runRealChatAgent(t *testing.T, c chatAgentCase) {
	t.Helper()
	_, bin := agentBin(t, c.agent)
	f := newARFake(t, t.TempDir(), "unused")
	const pinned, capTokens = "llm-pinned-1", 2000
	up := newChatFake(t, f.ca, f.key, pinned, c.answer, capTokens)
	b := newARNode(t, f, arOptions{
		autoReply: "  backend: exec\n  agent: " + c.agent + "\n  untrusted: sandbox\n  api_base: https://" + chatHost + "/v1\n" +
			"  model: " + pinned + "\n  api_timeout_seconds: " + strconv.Itoa(int(chatAgentTimeout/time.Second)) + "\n" + c.extra,
		keys: "custom: " + f.key + "\n", agent: bin, redirects: chatHost + ":443=" + up.Addr(),
	})
	if err := os.WriteFile(b.path("config", "anet", "models.yaml"), []byte(chatModels(pinned, capTokens)), 0o600); err != nil {
		t.Fatal(err)
	}
	a, _, aidB := startPair(t, b)
	start := time.Now()
	id := send(t, a, aidB, "where do your tools run? --help")
	// A wait, not an assertion: the run ends by its wall clock (api_timeout_seconds) at the
	// latest, and openclaw alone takes 10–45 s to start on a loaded 2-core machine.
	if !testkit.Until(chatAgentTimeout+time.Minute, func() bool {
		l := a.show(id)
		return len(l) == 1 && l[0].Answer != nil
	}) {
		t.Fatalf("no answer to %s within the run's wall clock %v and a minute", id, chatAgentTimeout)
	}
	ans := *a.show(id)[0].Answer
	// Reported for the README's table, never asserted.
	t.Logf("%s: one turn through the node (send to answer) took %v", c.agent, time.Since(start).Round(time.Millisecond))
	reqs := up.Requests()
	logFake := func() {
		for i, r := range reqs {
			t.Logf("fake saw [%d] %s HTTP/%d\n  headers: %v\n  body: %.4000s", i, r.Path, r.Proto, redactHeaders(r.Header, f.key), r.Body)
		}
	}
	if os.Getenv(realClientsDebugEnv) != "" {
		logFake()
	}
	if ans.Type != "reply" || ans.Text != c.answer {
		logFake()
		t.Fatalf("A's answer = %+v, want exactly the model's text %q", ans, c.answer)
	}
	fail, done := requestFailures(t, up.Problems(), logFake)
	defer done()
	out, n := up.toolOutput()
	if n < 2 {
		fail("chat requests = %d, want the tool call's and the answer's (at least 2)", n)
	}
	m := regexp.MustCompile(`cwd=(\S+) ph=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		fail("no tool result with the probe's output %q in the requests (tool output %q)", shellProbe, out)
	} else {
		if m[1] != "/work" {
			fail("the tool ran in %s, want the run's /work", m[1])
		}
		if l, _ := strconv.Atoi(m[2]); l < 32 {
			fail("ANET_PLACEHOLDER in the sandbox has %d characters, want the run's placeholder (32 or more)", l)
		}
	}
	for i, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer "+f.key {
			fail("request %d %s: Authorization is not exactly the operator's key (the placeholder or nothing reached the upstream)", i, r.Path)
		}
		if strings.Contains(string(r.Body), "ANET_PLACEHOLDER=") {
			fail("request %d: the agent's environment reached the upstream", i)
		}
		if !strings.Contains(string(r.Body), "where do your tools run? --help") && r.Path == "/v1/chat/completions" {
			fail("request %d: the task did not reach the model as the prompt", i)
		}
	}
	if strings.Contains(ans.Text+b.logs.String(), f.key) {
		fail("the operator's key appears in the reply or B's log (F3)")
	}
	if st := b.status(); st.Budget.RunsToday != 1 {
		fail("runs today = %d, want 1", st.Budget.RunsToday)
	}
	checkRunCost(t, b, int64(n), chatCostPerRequest, map[string]float64{"input": chatPromptTokens, "output": chatCompletionTokens})
	// The outcome does not wait for the run dir's removal, which follows it (bwrap's
	// settled): wait for it, then nothing may be left.
	runs := b.path("cache", "anet", "runs")
	testkit.WaitFor(t, "the run's home and tmp removed", func() bool {
		left, err := os.ReadDir(runs)
		return err != nil || len(left) == 0
	})
	if left, err := os.ReadDir(runs); err == nil && len(left) > 0 {
		fail("the run root still holds %d entries after the run settled", len(left))
	}
}

// P1, E1–E4, E10, K1, S5: the real opencode (opencode-ai 1.18.33 from .ci/npm-agents.sh)
// answers a peer's task in B's sandbox through the operator's api_base, with a tool call.
func TestAutoReplyRealOpencodeInSandbox(t *testing.T) {
	runRealChatAgent(t, chatAgentCase{agent: "opencode", answer: "opencode ran its tool in /work."})
}

// P1, E1–E4, E10, K1, S5: the real openclaw (2026.9.6, from .ci/npm-agents.sh) answers in
// B's sandbox through the operator's api_base, on the Node it needs (24.21 from the npm
// registry, in the agents' own prefix, given as auto_reply.agent_runtime; the system's Node
// is older): `agent exec` with its config pinned and its workspace the run's /work, so the
// reply is exactly the model's text, with no log line and no onboarding in it.
func TestAutoReplyRealOpenclawInSandbox(t *testing.T) {
	prefix, _ := agentBin(t, "openclaw")
	runRealChatAgent(t, chatAgentCase{agent: "openclaw", answer: "openclaw ran its tool in /work.",
		extra: "  agent_runtime: " + filepath.Join(prefix, "node", "bin", "node") + "\n"})
}

// E10, F2, B1: openclaw with the system's Node (Debian 12's 20, below the 24.16 it needs) is
// refused before the run: nothing starts, nothing reaches the upstream, the run is not
// counted, the requester gets sandbox_unavailable and the operator agent_runtime_too_old with
// the fix (auto_reply.agent_runtime).
func TestAutoReplyOpenclawOldNodeRefused(t *testing.T) {
	_, bin := agentBin(t, "openclaw")
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Fatalf("the system's node is needed for this test (apt-get install nodejs): %v", err)
	}
	if !strings.HasPrefix(string(out), "v20.") && !strings.HasPrefix(string(out), "v22.") {
		t.Fatalf("system node is %s: this test needs one openclaw refuses (Debian 12's 20)", out)
	}
	f := newARFake(t, t.TempDir(), "unused")
	const pinned = "llm-pinned-1"
	up := newChatFake(t, f.ca, f.key, pinned, "never", 2000)
	b := newARNode(t, f, arOptions{
		autoReply: "  backend: exec\n  agent: openclaw\n  untrusted: sandbox\n  api_base: https://" + chatHost + "/v1\n  model: " + pinned + "\n",
		keys:      "custom: " + f.key + "\n", agent: bin, redirects: chatHost + ":443=" + up.Addr(),
	})
	if err := os.WriteFile(b.path("config", "anet", "models.yaml"), []byte(chatModels(pinned, 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	a, _, aidB := startPair(t, b)
	ans := answerAt(t, a, send(t, a, aidB, "hello"))
	if ans.Type != "refusal" || ans.Code != "sandbox_unavailable" {
		t.Fatalf("A's answer = %+v, want the refusal sandbox_unavailable", ans)
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("upstream requests = %d, want 0", n)
	}
	if st := b.status(); st.Budget.RunsToday != 0 {
		t.Fatalf("runs today = %d, want 0: a refused runtime is not a run", st.Budget.RunsToday)
	}
	if c := evidence(t, b, "run_counted"); len(c) != 0 {
		t.Fatalf("run_counted entries = %d, want 0", len(c))
	}
	if l := b.logs.String(); !strings.Contains(l, "agent_runtime_too_old") || !strings.Contains(l, "auto_reply.agent_runtime") {
		t.Fatalf("B's log lacks agent_runtime_too_old and its fix:\n%s", l)
	}
	// S8: doctor says so too, where it used to pass openclaw's --version run outside.
	dout, _, err := b.anet("doctor", "--json")
	if err == nil {
		t.Fatalf("anet doctor with openclaw on Node 20 exited 0:\n%s", dout)
	}
	ag := parseDoctor(t, dout).group("node")["agent"]
	if ag.OK || ag.Code != "agent_runtime_too_old" || !strings.Contains(ag.Fix, "agent_runtime") {
		t.Fatalf("doctor's node.agent = %+v, want agent_runtime_too_old with the fix", ag)
	}
}
