//go:build anettest

package modelproxy

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
)

// lastReceipt waits for the proxy's n-th receipt (the agent can have its answer before the
// handler has kept it) and checks the set still validates as anetd will check it.
func (h *harness) lastReceipt(n int) receipt.Model {
	h.t.Helper()
	testkit.WaitFor(h.t, fmt.Sprintf("%d model receipts", n), func() bool { return len(h.proxy.Usage().Receipts) >= n })
	u := h.proxy.Usage()
	if len(u.Receipts) != n || u.DroppedReceipts != 0 {
		h.t.Fatalf("receipts = %d (%d dropped), want %d: %+v", len(u.Receipts), u.DroppedReceipts, n, u.Receipts)
	}
	if err := (receipt.Set{Model: u.Receipts}).Validate(); err != nil {
		h.t.Fatalf("receipts do not validate: %v\n%+v", err, u.Receipts)
	}
	r := u.Receipts[n-1]
	if r.Started.IsZero() || r.Ended.Before(r.Started) || r.Started.Location() != time.UTC {
		h.t.Fatalf("receipt times %v–%v, want UTC and in order", r.Started, r.Ended)
	}
	return r
}

func wantModelEnd(t *testing.T, r receipt.Model, end receipt.End, code reasons.Code, rule string, status int) {
	t.Helper()
	if r.End != end || r.Code != code || r.Rule != rule || r.Status != status {
		t.Fatalf("receipt %s/%s/%s status %d, want %s/%s/%s %d: %+v", r.End, r.Code, r.Rule, r.Status, end, code, rule, status, r)
	}
}

// TestModelReceiptMeteredK1: an answered request's receipt holds the API, the path without its
// query, the status the agent got, the pinned model it went out with (E2) and exactly the
// tokens and cost the meter charged for the stand-in's usage.
func TestModelReceiptMeteredK1(t *testing.T) {
	u := standin.Usage{Input: 12345, Output: 6789, CacheWrite: 2000, CacheRead: 50000, Reasoning: 789}
	for _, c := range []struct {
		name, agent, path, body, api, wantPath string
		in                                     int64
	}{
		{"anthropic sse", "claude", "/v1/messages?beta=true", `{"max_tokens":100,"stream":true,"messages":[{"role":"user","content":"x"}]}`, "anthropic", "/v1/messages", 12345 + 2000 + 50000},
		{"responses json", "codex", "/v1/responses", `{"input":"x","max_output_tokens":100}`, "openai", "/v1/responses", 12345 + 50000},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.agent, "", Limits{})
			h.up.SetUsage(u)
			resp, body, s := h.sent(c.path, c.body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("POST %s = %d %s", c.path, resp.StatusCode, body)
			}
			r := h.lastReceipt(1)
			wantModelEnd(t, r, receipt.Closed, "", "", 200)
			if r.API != c.api || r.Method != "POST" || r.Path != c.wantPath || r.Model != h.proxy.Engine().Model() {
				t.Fatalf("receipt = %+v, want %s POST %s with model %s", r, c.api, c.wantPath, h.proxy.Engine().Model())
			}
			if r.TokensIn != c.in || r.TokensOut != 6789 || r.Cost != s.Cost || r.Cost == 0 {
				t.Fatalf("receipt tokens %d in %d out cost %d, want %d in 6789 out and the charged %d", r.TokensIn, r.TokensOut, r.Cost, c.in, s.Cost)
			}
		})
	}
}

// TestModelReceiptsOfRefusalsE9: a request a rule refuses is recorded refused with the code its
// answer carried in X-Anet-Refusal and the rule (E5, K2); a limit of R1 caps it; none is
// forwarded, so none names a model or costs anything.
func TestModelReceiptsOfRefusalsE9(t *testing.T) {
	allowance := money.Micros(1)
	h := newHarness(t, "claude", "", Limits{Requests: 2}, func(o *Options) { o.Allowance = &allowance })
	cases := []struct {
		body   string
		code   reasons.Code
		end    receipt.End
		rule   string
		status int
	}{
		{`{"max_tokens":100,"mcp_servers":[{"type":"url","url":"https://mcp.example","name":"x"}],"messages":[{"role":"user","content":"x"}]}`, rules.MCPServersRefused, receipt.Refused, "E5", 400},
		{`{"max_tokens":100,"messages":[{"role":"user","content":"x"}]}`, reasons.SpendLimit, receipt.Refused, "K2", 400},
		{`{"max_tokens":100,"messages":[{"role":"user","content":"x"}]}`, RequestLimit, receipt.Capped, "R1", 400},
	}
	for i, c := range cases {
		resp, body := h.do("POST", "/v1/messages", nil, c.body)
		if resp.StatusCode != c.status || resp.Header.Get("X-Anet-Refusal") != string(c.code) || resp.Header.Get("X-Anet-Reason") != string(c.code) {
			t.Fatalf("request %d = %d %s (refusal %q), want %d %s", i, resp.StatusCode, body, resp.Header.Get("X-Anet-Refusal"), c.status, c.code)
		}
		r := h.lastReceipt(i + 1)
		wantModelEnd(t, r, c.end, c.code, c.rule, c.status)
		if r.API != "anthropic" || r.Path != "/v1/messages" || r.Model != "" || r.TokensIn != 0 || r.TokensOut != 0 || r.Cost != 0 {
			t.Fatalf("receipt of refused request %d = %+v, want anthropic /v1/messages, not forwarded, nothing charged", i, r)
		}
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Fatalf("the upstream got %d requests, want none", n)
	}
	// A request without the run's token is no request of the run: no receipt.
	req, _ := http.NewRequest("POST", h.front.URL+"/v1/messages", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("request without the token = %v, %v, want 401", resp, err)
	}
	resp.Body.Close()
	time.Sleep(20 * time.Millisecond)
	if n := len(h.proxy.Usage().Receipts); n != len(cases) {
		t.Fatalf("%d receipts after a request without the token, want %d", n, len(cases))
	}
}

// TestModelReceiptsLocalAndFailedE11: a models list answered by the node closes without a
// model; a request the upstream cannot be reached for fails with its code, after having been
// forwarded pinned.
func TestModelReceiptsLocalAndFailedE11(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	if resp, b := h.do("GET", "/v1/models", nil, ""); resp.StatusCode != 200 {
		t.Fatalf("GET /v1/models = %d %s", resp.StatusCode, b)
	}
	r := h.lastReceipt(1)
	wantModelEnd(t, r, receipt.Closed, "", "", 200)
	if r.Method != "GET" || r.Path != "/v1/models" || r.Model != "" {
		t.Fatalf("receipt of the models list = %+v", r)
	}
	up, _ := upstream.For("claude", "")
	dialer.AnetTestRedirect(up.Addr(), "127.0.0.1:1")
	h.up.DropConnections()
	if resp, b := h.do("POST", "/v1/messages", nil, `{"max_tokens":100,"messages":[{"role":"user","content":"x"}]}`); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("POST with the upstream unreachable = %d %s, want 502", resp.StatusCode, b)
	}
	r = h.lastReceipt(2)
	wantModelEnd(t, r, receipt.Failed, UpstreamFailed, "E11", http.StatusBadGateway)
	if r.Model != h.proxy.Engine().Model() || r.Cost != 0 || r.TokensIn != 0 {
		t.Fatalf("receipt of the failed request = %+v, want the pinned model and nothing charged", r)
	}
}
