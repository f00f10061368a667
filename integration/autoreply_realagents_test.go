package integration

import (
	"strings"
	"testing"
)

// P1, E1–E3, E10, K1: the real Claude Code CLI (from .ci/npm-agents.sh) answers a peer's task
// inside B's sandbox: anetd finds it on its PATH, sandboxd runs it with the endpoint
// settings of pkg/agents, and its one streamed Messages request reaches the fake Anthropic
// upstream (test CA) pinned and capped. A receives Claude's answer; the run's cost in B's
// chain is the fake's usage (with cache tokens) × claude-haiku-5-5's prices.
func TestAutoReplyRealClaudeInSandbox(t *testing.T) {
	_, claude := agentBin(t, "claude")
	f := newARFake(t, t.TempDir(), arPinned)
	const answer = "The answer is 42, from the sandbox."
	f.up.SetStream(streamAnthropicText(arPinned, answer))
	b := newARNode(t, f, arOptions{autoReply: "  backend: exec\n  agent: claude\n  untrusted: sandbox\n  api_timeout_seconds: 90\n", agent: claude})
	a, _, aidB := startPair(t, b)
	id := send(t, a, aidB, "what is 6*7? --help; reply in one sentence")
	ans := answerAt(t, a, id)
	if ans.Type != "reply" || strings.TrimSpace(ans.Text) != answer {
		t.Fatalf("A's answer = %+v, want Claude's reply %q", ans, answer)
	}
	var msgs int
	for _, r := range f.up.Requests() {
		if r.Path == "/v1/messages" {
			msgs++
			body, err := decodeBody(r.Body)
			if err != nil || body["model"] != arPinned {
				t.Fatalf("claude's request model = %v (%v), want %s", body["model"], err, arPinned)
			}
			if n, ok := jsonInt(body["max_tokens"]); !ok || n > 8192 {
				t.Fatalf("claude's max_tokens = %v, want at most 8192", body["max_tokens"])
			}
			if !strings.Contains(string(r.Body), "what is 6*7? --help") {
				t.Fatal("the task did not reach the model as the prompt")
			}
		}
	}
	if msgs == 0 {
		t.Fatal("claude sent no /v1/messages through the endpoint")
	}
	if p := f.up.Problems(); len(p) > 0 {
		t.Fatalf("upstream saw rule violations: %v", p)
	}
	if st := b.status(); st.Budget.RunsToday != 1 {
		t.Fatalf("runs today = %d, want 1", st.Budget.RunsToday)
	}
	// K1: the run's cost is the fake's usage × the pinned model's prices, per request.
	checkRunCost(t, b, int64(msgs), claudeStreamCost, map[string]float64{"input": 1200, "cache_write": 3000, "cache_read": 40000, "output": 9})
}

// checkRunCost checks the one counted run's tokens and cost in B's chain and status: n
// requests, each costing perRequest µ and reporting the tokens of perTokens (K1).
func checkRunCost(t *testing.T, b *testNode, n, perRequest int64, perTokens map[string]float64) {
	t.Helper()
	c := evidence(t, b, "run_counted")
	if len(c) != 1 {
		t.Fatalf("run_counted entries = %d, want 1", len(c))
	}
	d := details(t, c[0])
	tok, _ := d["tokens"].(map[string]any)
	for k, v := range perTokens {
		if tok[k] != v*float64(n) {
			t.Errorf("run_counted tokens.%s = %v, want %d × %v", k, tok[k], n, v)
		}
	}
	if d["cost_micros"] != float64(n*perRequest) || d["usage_missing"] != float64(0) {
		t.Fatalf("run_counted = %v, want cost_micros %d (%d requests × %d µ), no usage missing", d, n*perRequest, n, perRequest)
	}
	if sp := b.status().Budget.Spend; int64(sp.Spent) != n*perRequest {
		t.Fatalf("B's spend today = %+v, want %d µ", sp, n*perRequest)
	}
}

// P1, E10, K1: the real Codex CLI answers in B's sandbox: its config.toml (written by the node
// into the run's agent home) points it at the endpoint with the placeholder, and its
// Responses request reaches the fake OpenAI upstream pinned, with store:false; the run's cost
// is the fake's usage (cached input, reasoning) × gpt-6-luna's prices.
func TestAutoReplyRealCodexInSandbox(t *testing.T) {
	_, codex := agentBin(t, "codex")
	f := newARFake(t, t.TempDir(), arPinned)
	const pinned, answer = "gpt-6-luna", "Codex says 42 from the sandbox."
	oa := newOpenAIFake(t, f.ca, f.key, pinned, answer)
	f.openai = oa.Addr()
	b := newARNode(t, f, arOptions{autoReply: "  backend: exec\n  agent: codex\n  untrusted: sandbox\n  api_timeout_seconds: 90\n", keys: "openai: " + f.key + "\n", agent: codex})
	a, _, aidB := startPair(t, b)
	ans := answerAt(t, a, send(t, a, aidB, "what is 6*7?"))
	if ans.Type != "reply" || !strings.Contains(ans.Text, answer) {
		t.Fatalf("A's answer = %+v, want Codex's reply %q", ans, answer)
	}
	n := 0
	for _, r := range oa.Requests() {
		if r.Path == "/v1/responses" {
			n++
			body, err := decodeBody(r.Body)
			if err != nil || body["model"] != pinned || body["store"] != false {
				t.Fatalf("codex's request: model %v, store %v (%v), want %s and false", body["model"], body["store"], err, pinned)
			}
		}
	}
	if n == 0 {
		t.Fatal("codex sent no /v1/responses through the endpoint")
	}
	if p := oa.Problems(); len(p) > 0 {
		t.Fatalf("upstream problems: %v", p)
	}
	// K1: cached input at the cache-read price, reasoning billed as output.
	checkRunCost(t, b, int64(n), codexStreamCost, map[string]float64{"input": 1000, "cache_read": 4000, "output": 900, "reasoning": 300})
}
