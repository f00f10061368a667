//go:build anettest

package modelproxy

import (
	"strings"
	"testing"

	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
)

// K2 through the proxy: with an allowance that holds the answer's worst case alone, a request
// whose tool names its own model and max_tokens is refused with spend_limit, because the
// tool's length is reserved too; the same request without the tool is forwarded.
func TestSpendLimitCountsToolLengthK2(t *testing.T) {
	e := mustEngine(t, "claude", "", "")
	const msgs = `"max_tokens":100,"messages":[{"role":"user","content":"x"}]`
	withTool := `{` + msgs + `,"tools":[{"name":"a","input_schema":{"type":"object"},"model":"x","max_tokens":5000}]}`
	d := e.Apply(rules.AnthropicMessages, hdr(), []byte(withTool))
	// What the answer alone may cost, for this very body: the reservation before the fix.
	answerOnly := ceilDiv(ceilDiv(int64(len(d.Body)), 3)*haikuCacheWrite+100*haikuOut, 1e6)
	allowance := money.Micros(answerOnly)
	h := newHarness(t, "claude", "", Limits{}, func(o *Options) { o.Allowance = &allowance })
	h.up.SetUsage(standin.Usage{Input: 1, Output: 1})
	resp, b, _ := h.sent("/v1/messages", withTool, nil)
	if resp.StatusCode != 400 || resp.Header.Get("X-Anet-Reason") != string(reasons.SpendLimit) || !strings.Contains(b, "5100 output tokens") {
		t.Fatalf("request with a 5000-token tool, allowance %s for 100 tokens: %d %s, want 400 spend_limit naming 5100 output tokens", allowance, resp.StatusCode, b)
	}
	if resp, b, _ := h.sent("/v1/messages", `{`+msgs+`}`, nil); resp.StatusCode != 200 {
		t.Fatalf("the same request without the tool: %d %s, want 200", resp.StatusCode, b)
	}
}
