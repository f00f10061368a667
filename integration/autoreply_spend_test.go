package integration

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/modelproxy/standin"
)

// K1, K2, B4, B5 with a real anetd: a runaway agent streams one request after another until
// its wall clock ends; its endpoint stops it at its allowance (the peer's cap), past it only
// by the last request's estimate error. The run's tokens and cost go into the chain, status
// and `anet show`; the peer's next task is refused with budget and the day's end; a restart
// of B rebuilds the day's spend from the chain and still refuses.
func TestAutoReplySpendCapK1K2(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	// Each stream reports 55000 input and 3000 output tokens: 5500 + 1500 = 7000 µ at
	// claude-haiku-5-5's 0.10/0.50 — more than its worst case estimated from its small body
	// (~4100 µ, almost all of it the 8192 output tokens), as a request can be.
	f.up.SetUsage(standin.Usage{Input: 55000, Output: 3000})
	const perStream = 7000
	b := newARNode(t, f, arOptions{autoReply: "  backend: exec\n  agent: claude\n  untrusted: sandbox\n  api_timeout_seconds: 8\n" +
		"  sandbox:\n    spend_per_day: \"0.05\"\n    spend_per_peer_per_day: 0.02\n"})
	a, aidA, aidB := startPair(t, b)

	id := send(t, a, aidB, "LOOP until stopped")
	if ans := answerAt(t, a, id); ans.Type != "refusal" || ans.Code != "turn_failed" {
		t.Fatalf("A's answer to the runaway run = %+v, want turn_failed (its wall clock ended it)", ans)
	}
	// Allowance 20000 µ: streams 1–3 fit (0, 7000, 14000 spent + ~4100 ≤ 20000); the 4th
	// (21000 spent) never leaves, however long the agent keeps asking.
	streams := 0
	for _, r := range f.up.Requests() {
		if r.Path == "/v1/messages" {
			streams++
		}
	}
	if streams != 3 {
		t.Fatalf("upstream streams = %d, want 3: the allowance must stop the run", streams)
	}
	counted := evidence(t, b, "run_counted")
	if len(counted) != 1 {
		t.Fatalf("run_counted entries = %d, want 1", len(counted))
	}
	d := details(t, counted[0])
	tok, _ := d["tokens"].(map[string]any)
	if d["cost_micros"] != float64(3*perStream) || d["allowance_micros"] != float64(20000) || tok["input"] != float64(3*55000) || tok["output"] != float64(3*3000) || d["model"] != arPinned {
		t.Fatalf("run_counted details = %v, want 3 streams' tokens and cost 21000 of allowance 20000", d)
	}
	raw, _ := json.Marshal(counted[0])
	if strings.Contains(string(raw), "LOOP until stopped") || strings.Contains(string(raw), "go on") {
		t.Fatalf("run_counted holds prompt text: %s", raw)
	}
	completed := evidence(t, b, "turn_completed")
	var usage struct {
		Model struct {
			Refusals map[string]int64 `json:"refusals"`
		} `json:"model"`
	}
	if u, ok := details(t, completed[0])["usage"]; ok {
		ub, _ := json.Marshal(u)
		json.Unmarshal(ub, &usage)
	}
	if usage.Model.Refusals["spend_limit"] < 1 {
		t.Fatalf("the run's usage = %+v, want spend_limit refusals", usage)
	}

	checkSpent := func(when string) {
		t.Helper()
		st := b.status()
		sp := st.Budget.Spend
		if sp.Spent != 3*perStream || sp.PerDay != 50000 || sp.PerPeerPerDay != 20000 || sp.Left != 50000-3*perStream || len(sp.Peers) != 1 ||
			sp.Peers[0].Peer != aidA || sp.Peers[0].Spent != 3*perStream || sp.Peers[0].Left != 0 {
			t.Fatalf("%s: B's spend = %+v, want A's 21000 of the day's 50000 and nothing left for A", when, sp)
		}
		if out := b.mustAnet("status"); !strings.Contains(out, "0.021 of 0.05 spent today by untrusted runs") || !strings.Contains(out, "peer "+aidA) {
			t.Fatalf("%s: anet status = %q, want today's spend and A's line", when, out)
		}
		ans := answerAt(t, a, send(t, a, aidB, "one more "+when))
		if ans.Type != "refusal" || ans.Code != "budget" || !ans.Until.Equal(st.Budget.DayEnds) {
			t.Fatalf("%s: A's next task = %+v, want budget until %v (K2, B4)", when, ans, st.Budget.DayEnds)
		}
	}
	checkSpent("before the restart")
	var shown control.Interaction // anet show --json prints one object
	if err := json.Unmarshal([]byte(b.mustAnet("show", "--json", id)), &shown); err != nil || len(shown.Runs) != 1 ||
		shown.Runs[0].Cost != 3*perStream || shown.Runs[0].Tokens.Input != 3*55000 {
		t.Fatalf("anet show --json = %+v (%v), want the run with its tokens and cost", shown, err)
	}
	if out := b.mustAnet("show", id); !strings.Contains(out, "tokens 165000 input, 9000 output") || !strings.Contains(out, "cost 0.021") {
		t.Fatalf("anet show = %q, want the run's tokens and cost", out)
	}
	// B5: a real restart rebuilds the day's spend from the chain.
	b.stop()
	b.arStart()
	checkSpent("after the restart")
	if streams := len(f.up.Requests()); streams != 3 {
		t.Fatalf("upstream requests = %d, want still 3: refused turns start no agent", streams)
	}
	b.mustAnet("evidence", "verify")
}

// K1, F2: a model the price list does not know (an api_base service's) cannot serve an
// untrusted run: nothing is sent and the operator sees model_unpriced. Once the operator
// prices it in the models override (<config dir>/models.yaml), the openai back-end's answer
// is metered at those prices.
func TestAutoReplyUnpricedModelK1(t *testing.T) {
	f := newARFake(t, t.TempDir(), "gpt-6-luna")
	f.up.SetUsage(standin.Usage{Input: 4000, CacheRead: 1000, Output: 700})
	b := newARNode(t, f, arOptions{
		autoReply: "  backend: openai\n  agent: opencode\n  untrusted: sandbox\n  api_base: https://api.openai.com/v1\n  model: gpt-6-luna\n",
		keys:      "custom: " + f.key + "\n",
	})
	a, _, aidB := startPair(t, b)
	if ans := answerAt(t, a, send(t, a, aidB, "say hello")); ans.Type != "refusal" || ans.Code != "sandbox_unavailable" {
		t.Fatalf("A's answer with an unpriced model = %+v, want sandbox_unavailable", ans)
	}
	if n := len(f.up.Requests()); n != 0 {
		t.Fatalf("upstream requests = %d, want 0: an unmetered call must not leave", n)
	}
	found := false
	for _, r := range b.status().AutoReply.Reasons {
		found = found || r.Code == "model_unpriced"
	}
	if !found {
		t.Fatalf("B's status reasons = %+v, want model_unpriced", b.status().AutoReply.Reasons)
	}
	// Prices with six decimals: 4000×0.3 + 1000×0.000125 + 700×1.5 = 1200 + 0.125 + 1050.
	models := "providers:\n  custom:\n    models:\n      gpt-6-luna: {input_price: \"0.30\", cache_read_price: \"0.000125\", output_price: 1.5}\n"
	if err := os.WriteFile(b.path("config", "anet", "models.yaml"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	b.stop()
	b.arStart()
	if ans := answerAt(t, a, send(t, a, aidB, "say hello again")); ans.Type != "reply" || ans.Text != "hello" {
		t.Fatalf("A's answer with the model priced = %+v, want the reply", ans)
	}
	checkRunCost(t, b, 1, 2251, map[string]float64{"input": 4000, "cache_read": 1000, "output": 700})
}
