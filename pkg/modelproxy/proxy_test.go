//go:build anettest

package modelproxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/secret"
)

// claudeCodeBody is what claude 2.1.328 -p sends (as the pinned CLI was seen sending it).
const claudeCodeBody = `{"model":"claude-opus-5-5","max_tokens":128000,"thinking":{"type":"adaptive"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"high"},"stream":false,"system":[{"type":"text","text":"You are Claude Code"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}}],"metadata":{"user_id":"u"}}`

var claudeCodeHeaders = http.Header{
	"Anthropic-Version": {"2023-06-01"},
	"Anthropic-Beta":    {"claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24"},
	"Accept-Encoding":   {"gzip, deflate, br, zstd"},
	"Content-Type":      {"application/json"},
	"X-Api-Key":         {standin.AgentCred},
}

// E1, E2, E3, E7, E11: a Claude Code turn reaches the fake upstream with the operator's key,
// over verified TLS and HTTP/2, pinned and capped; the fake upstream checks every request.
func TestProxyClaudeCodeTurnE1E7E11(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	resp, body := h.do("POST", "/v1/messages?beta=true", claudeCodeHeaders, claudeCodeBody)
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/messages = %d %s, want 200", resp.StatusCode, body)
	}
	if !strings.Contains(string(body), `"hello"`) {
		t.Fatalf("body = %s, want the upstream's answer", body)
	}
	if v := resp.Header.Get("Anthropic-Organization-Id"); v != "" {
		t.Fatalf("Anthropic-Organization-Id reached the agent: %q", v)
	}
	reqs := h.up.Requests()
	if len(reqs) != 1 || reqs[0].Query != "beta=true" || reqs[0].Path != "/v1/messages" {
		t.Fatalf("upstream saw %+v, want one POST /v1/messages?beta=true", reqs)
	}
	var o map[string]any
	json.Unmarshal(reqs[0].Body, &o)
	if o["model"] != "claude-haiku-5-5" || o["max_tokens"] != float64(8192) {
		t.Fatalf("upstream body model=%v max_tokens=%v, want claude-haiku-5-5 and 8192", o["model"], o["max_tokens"])
	}
	t.Run("count_tokens", func(t *testing.T) {
		resp, body := h.do("POST", "/v1/messages/count_tokens?beta=true", claudeCodeHeaders, `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"hi"}],"context_management":{"edits":[]}}`)
		if resp.StatusCode != 200 || !strings.Contains(string(body), "input_tokens") {
			t.Fatalf("count_tokens = %d %s, want 200", resp.StatusCode, body)
		}
	})
	t.Run("models answered locally", func(t *testing.T) {
		n := len(h.up.Requests())
		resp, body := h.do("GET", "/v1/models", nil, "")
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"claude-haiku-5-5"`) || len(h.up.Requests()) != n {
			t.Fatalf("GET /v1/models = %d %s (upstream calls %d→%d), want the pinned model, no upstream call", resp.StatusCode, body, n, len(h.up.Requests()))
		}
	})
}

// The same rules with the pinned model refusing what Claude Code sends (fake haiku rejects
// thinking enabled and sampling; the proxy normalises first), and an upstream error body
// forwarded unchanged.
func TestProxyNormalisesForPinnedModelE2(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	resp, body := h.do("POST", "/v1/messages", nil, `{"max_tokens":20000,"temperature":0.3,"thinking":{"type":"enabled","budget_tokens":16000},"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("normalised request = %d %s, want 200 from the fake upstream", resp.StatusCode, body)
	}
	// Betas dropped or never sent: their body fields go too, or the fake answers like the API
	// does ("Extra inputs are not permitted").
	resp, body = h.do("POST", "/v1/messages", http.Header{"Anthropic-Beta": {"advanced-tool-use-2025-11-20"}},
		`{"context_management":{"edits":[]},"output_config":{"effort":"low"},"tools":[{"name":"a","input_schema":{"type":"object"},"defer_loading":true}],"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("beta fields without their betas = %d %s, want 200", resp.StatusCode, body)
	}
	h2 := newHarness(t, "claude", "opus", Limits{})
	resp, body = h2.do("POST", "/v1/messages", nil, `{"max_tokens":20000,"thinking":{"type":"enabled","budget_tokens":16000},"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("budget kept valid = %d %s, want 200", resp.StatusCode, body)
	}
}

func TestProxyUpstreamErrorForwardedUnchanged(t *testing.T) {
	h := newHarness(t, "claude", "opus", Limits{})
	h.up.ForgetModels() // the fake now knows no model: it answers 404 like the API
	resp, body := h.do("POST", "/v1/messages", nil, `{"messages":[{"role":"user","content":"x"}]}`)
	want := `{"error":{"message":"model: claude-opus-5-5","type":"not_found_error"},"type":"error"}` + "\n"
	if resp.StatusCode != 404 || string(body) != want {
		t.Fatalf("upstream error = %d %q, want 404 %q", resp.StatusCode, body, want)
	}
}

// E9 and E1: refusals arrive in each API's error shape with the anet: sentence; a request
// without the placeholder is refused with 401 and never forwarded.
func TestProxyRefusalShapesE9(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	for _, c := range []struct {
		name   string
		method string
		path   string
		hdr    http.Header
		body   string
		status int
		code   reasons.Code
		etype  string
	}{
		{"no placeholder", "POST", "/v1/messages", http.Header{"Authorization": {"Bearer wrong"}}, `{}`, 401, PlaceholderMissing, "authentication_error"},
		{"placeholder in x-api-key ok but tool refused", "POST", "/v1/messages", http.Header{"Authorization": nil, "X-Api-Key": {h.ph}}, `{"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, 400, rules.ServerToolRefused, "invalid_request_error"},
		{"files endpoint", "POST", "/v1/files", nil, `{}`, 404, rules.EndpointNotAllowed, "not_found_error"},
		{"batches", "POST", "/v1/messages/batches", nil, `{"requests":[]}`, 404, rules.EndpointNotAllowed, "not_found_error"},
		{"encoded path", "POST", "/v1/%6dessages", nil, `{}`, 404, rules.EndpointNotAllowed, "not_found_error"},
		{"gzip body", "POST", "/v1/messages", http.Header{"Content-Encoding": {"gzip"}}, `{}`, 400, rules.BodyEncoded, "invalid_request_error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := len(h.up.Requests())
			resp, body := h.do(c.method, c.path, c.hdr, c.body)
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			json.Unmarshal(body, &e)
			want := "anet: " + reasons.Text(c.code)
			if resp.StatusCode != c.status || e.Type != "error" || e.Error.Type != c.etype || !strings.HasPrefix(e.Error.Message, want) {
				t.Fatalf("%s = %d %s, want %d %s %q", c.name, resp.StatusCode, body, c.status, c.etype, want)
			}
			if len(h.up.Requests()) != n {
				t.Fatalf("%s reached the upstream", c.name)
			}
		})
	}
	o := newHarness(t, "codex", "", Limits{})
	resp, body := o.do("POST", "/v1/responses", nil, `{"previous_response_id":"resp_1"}`)
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	json.Unmarshal(body, &e)
	if resp.StatusCode != 400 || e.Error.Type != "invalid_request_error" || e.Error.Code != string(rules.StorageRefused) || !strings.HasPrefix(e.Error.Message, "anet: "+reasons.Text(rules.StorageRefused)) {
		t.Fatalf("openai refusal = %d %s, want the OpenAI error shape with code %s", resp.StatusCode, body, rules.StorageRefused)
	}
}

// E6, E7 through the HTTP layer for Codex.
func TestProxyCodexTurnE6(t *testing.T) {
	h := newHarness(t, "codex", "", Limits{})
	hdr := http.Header{"Chatgpt-Account-Id": {standin.AgentCred}, "Openai-Project": {standin.AgentCred}, "X-Codex-Window-Id": {"w"}}
	for _, c := range []struct{ path, body string }{
		{"/v1/responses", `{"model":"gpt-6","store":false,"stream":false,"include":["reasoning.encrypted_content"],"input":[{"role":"user","content":"hi"}],"prompt_cache_key":"k"}`},
		{"/v1/responses/compact", `{"model":"gpt-6","input":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat/completions", `{"model":"gpt-6","messages":[{"role":"user","content":"hi"}],"max_tokens":100000}`},
	} {
		resp, body := h.do("POST", c.path, hdr, c.body)
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s = %d %s, want 200", c.path, resp.StatusCode, body)
		}
		if resp.Header.Get("Openai-Organization") != "" {
			t.Fatalf("Openai-Organization reached the agent")
		}
	}
	resp, body := h.do("GET", "/v1/models", nil, "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"gpt-6-luna"`) {
		t.Fatalf("GET /v1/models = %d %s, want the pinned model", resp.StatusCode, body)
	}
	resp, _ = h.do("GET", "/v1/responses", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}, "")
	if resp.StatusCode != 404 {
		t.Fatalf("WebSocket upgrade = %d, want 404 so that Codex falls back to HTTP", resp.StatusCode)
	}
}

// bodyOfSize returns a valid Messages body of exactly n bytes.
func bodyOfSize(t *testing.T, n int) string {
	pre, post := `{"messages":[{"role":"user","content":"`, `"}]}`
	pad := n - len(pre) - len(post)
	if pad < 0 {
		t.Fatalf("bodyOfSize(%d) too small", n)
	}
	return pre + strings.Repeat("a", pad) + post
}

// R1: each model limit at its edge: the last allowed passes, the next is refused by name.
func TestProxyLimitsR1(t *testing.T) {
	refusedWith := func(t *testing.T, resp *http.Response, body []byte, status int, code reasons.Code) {
		t.Helper()
		if resp.StatusCode != status || !strings.Contains(string(body), "anet: "+reasons.Text(code)) {
			t.Fatalf("response = %d %s, want %d with %q", resp.StatusCode, body, status, reasons.Text(code))
		}
	}
	t.Run("60 requests", func(t *testing.T) {
		h := newHarness(t, "claude", "", Limits{})
		for i := 1; i <= 60; i++ {
			resp, body := h.do("POST", "/v1/messages", nil, `{"messages":[{"role":"user","content":"x"}]}`)
			if resp.StatusCode != 200 {
				t.Fatalf("request %d = %d %s, want 200", i, resp.StatusCode, body)
			}
		}
		resp, body := h.do("POST", "/v1/messages", nil, `{"messages":[{"role":"user","content":"x"}]}`)
		refusedWith(t, resp, body, 400, RequestLimit)
		if u := h.proxy.Usage(); u.Requests != 60 || u.Forwarded != 60 || u.Refusals[RequestLimit] != 1 {
			t.Fatalf("Usage = %+v, want 60 requests, 60 forwarded, 1 request-limit refusal", u)
		}
	})
	t.Run("8 MiB body", func(t *testing.T) {
		h := newHarness(t, "claude", "", Limits{})
		resp, body := h.do("POST", "/v1/messages", nil, bodyOfSize(t, 8<<20))
		if resp.StatusCode != 200 {
			t.Fatalf("8 MiB body = %d %s, want 200", resp.StatusCode, body)
		}
		resp, body = h.do("POST", "/v1/messages", nil, bodyOfSize(t, 8<<20+1))
		refusedWith(t, resp, body, 413, BodyTooLarge)
	})
	t.Run("8 MiB body chunked", func(t *testing.T) {
		h := newHarness(t, "claude", "", Limits{})
		req, _ := http.NewRequest("POST", h.front.URL+"/v1/messages", strings.NewReader(bodyOfSize(t, 8<<20+1)))
		req.ContentLength = -1 // chunked: the size is only known by reading
		req.Header.Set("Authorization", "Bearer "+h.ph)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := make([]byte, 4096)
		n, _ := resp.Body.Read(b)
		refusedWith(t, resp, b[:n], 413, BodyTooLarge)
	})
	t.Run("16 MiB in all", func(t *testing.T) {
		h := newHarness(t, "claude", "", Limits{})
		for i := 0; i < 2; i++ {
			resp, body := h.do("POST", "/v1/messages", nil, bodyOfSize(t, 8<<20))
			if resp.StatusCode != 200 {
				t.Fatalf("body %d = %d %s, want 200", i, resp.StatusCode, body)
			}
		}
		resp, body := h.do("POST", "/v1/messages", nil, `{}`)
		refusedWith(t, resp, body, 400, RequestDataLimit)
		if u := h.proxy.Usage(); u.BytesFromAgent != 16<<20 {
			t.Fatalf("Usage.BytesFromAgent = %d, want %d", u.BytesFromAgent, 16<<20)
		}
	})
}

// SSE is forwarded event by event: the agent sees event 1 before the upstream sends event 2.
func TestProxyStreamsEventByEvent(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	release := make(chan struct{})
	h.up.SetStream(func(w http.ResponseWriter, f http.Flusher) {
		io := func(s string) { fmt.Fprint(w, s); f.Flush() }
		io("event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
		select {
		case <-release:
		case <-time.After(60 * time.Second):
			return
		}
		io("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	req, _ := http.NewRequest("POST", h.front.URL+"/v1/messages", strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("X-Api-Key", h.ph)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		r := bufio.NewReader(resp.Body)
		var ev strings.Builder
		for {
			line, err := r.ReadString('\n')
			ev.WriteString(line)
			if line == "\n" || err != nil {
				break
			}
		}
		got <- ev.String()
	}()
	select {
	case ev := <-got:
		if !strings.Contains(ev, "message_start") {
			t.Fatalf("first event = %q, want message_start", ev)
		}
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("event 1 did not reach the agent before event 2 was sent: the proxy buffers SSE")
	}
	close(release)
	rest := make([]byte, 1024)
	n, _ := ioReadFull(resp, rest)
	if !strings.Contains(string(rest[:n]), "message_stop") {
		t.Fatalf("rest of stream = %q, want message_stop", rest[:n])
	}
}

func ioReadFull(resp *http.Response, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := resp.Body.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// F3, E1: the operator's key never shows in a log line, an answer, an error or the usage.
func TestProxyKeyNeverLeaks(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	var answers strings.Builder
	record := func(resp *http.Response, body []byte) {
		resp.Header.Write(&answers)
		answers.Write(body)
	}
	record(h.do("POST", "/v1/messages", claudeCodeHeaders, claudeCodeBody))
	record(h.do("POST", "/v1/messages", nil, `{"tools":[{"type":"web_fetch_20250910","name":"f"}]}`))
	record(h.do("POST", "/v1/files", nil, `{}`))
	record(h.do("POST", "/v1/messages", http.Header{"Authorization": {"Bearer " + h.key}}, `{}`))
	// An unreachable upstream: the transport error is logged and answered.
	up, _ := upstream.For("claude", "")
	dialer.AnetTestRedirect(up.Addr(), "127.0.0.1:1")
	h.up.DropConnections()
	record(h.do("POST", "/v1/messages", nil, `{"messages":[{"role":"user","content":"x"}]}`))
	usage, _ := json.Marshal(h.proxy.Usage())
	_, err := New(h.proxy.Engine(), up, Options{Placeholder: "short", Key: secret.New(h.key)})
	errText := fmt.Sprint(err)
	for name, s := range map[string]string{"log": h.logs.String(), "answers": answers.String(), "usage": string(usage), "error": errText} {
		if strings.Contains(s, h.key) {
			t.Fatalf("the key appears in the %s: %s", name, s)
		}
	}
	if !strings.Contains(h.logs.String(), "model upstream failed") || !strings.Contains(answers.String(), reasons.Text(UpstreamFailed)) {
		t.Fatalf("upstream failure not logged/answered; log: %s", h.logs.String())
	}
	if !strings.Contains(answers.String(), reasons.Text(PlaceholderMissing)) {
		t.Fatalf("the operator's key sent by the agent was accepted as the placeholder")
	}
}

// The account headers are deleted from the upstream's answer by their canonical key (the
// transport canonicalises what it reads); a name not in that form would never match, and
// the header would reach the agent.
func TestStrippedResponseHeadersAreCanonical(t *testing.T) {
	for _, h := range strippedResponseHeaders {
		if c := http.CanonicalHeaderKey(h); c != h {
			t.Errorf("stripped header %q is not canonical (%q): it would never be deleted", h, c)
		}
	}
}
