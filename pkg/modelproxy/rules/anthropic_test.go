package rules

import (
	"net/http"
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

const userMsg = `"messages":[{"role":"user","content":"hi"}]`

// E2: the model is pinned in every field that names one.
func TestAnthropicModelPinnedE2(t *testing.T) {
	opus := mustEngine(t, "claude", "", "opus")
	runRules(t, opus, []ruleCase{
		{name: "model rewritten", api: AnthropicMessages, body: `{"model":"claude-sonnet-5-5",` + userMsg + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "claude-opus-5-5", "model") }},
		{name: "model missing set", api: AnthropicMessages, body: `{` + userMsg + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "claude-opus-5-5", "model") }},
		{name: "model not a string replaced", api: AnthropicMessages, body: `{"model":{"x":1},` + userMsg + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "claude-opus-5-5", "model") }},
		{name: "count_tokens pinned", api: AnthropicCountTokens, body: `{"model":"claude-x",` + userMsg + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "claude-opus-5-5", "model") }},
		{name: "fallbacks repeated pinned and capped", api: AnthropicMessages,
			body: `{"model":"x",` + userMsg + `,"fallbacks":[{"model":"claude-sonnet-5-5","max_tokens":64000},{"model":"evil"}]}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "claude-opus-5-5", "fallbacks", 0, "model")
				wantField(t, o, "claude-opus-5-5", "fallbacks", 1, "model")
				wantField(t, o, "8192", "fallbacks", 0, "max_tokens")
				wantField(t, o, "8192", "fallbacks", 1, "max_tokens")
			}},
		{name: "fallbacks not an array", api: AnthropicMessages, body: `{` + userMsg + `,"fallbacks":{"model":"x"}}`, want: FieldInvalid, detail: "fallbacks"},
	})
}

// E4, E5, E9: a fallbacks[] entry carries only model and max_tokens; anything else would be
// a second request the top-level rules never saw, and is refused with the sentence the same
// field gets at the top level.
func TestAnthropicFallbackFieldsE4E5(t *testing.T) {
	e := mustEngine(t, "claude", "", "")
	fb := func(entry string) string {
		return `{"model":"x",` + userMsg + `,"fallbacks":[{"model":"claude-haiku-5-5","max_tokens":100},` + entry + `]}`
	}
	runRules(t, e, []ruleCase{
		{name: "server tool in a fallback", api: AnthropicMessages,
			body: fb(`{"model":"m","max_tokens":100,"tools":[{"type":"web_search_20250305","name":"web_search"}]}`),
			want: ServerToolRefused, detail: `fallbacks[1].tools[0].type "web_search_20250305"`},
		{name: "client tool in a fallback", api: AnthropicMessages,
			body: fb(`{"model":"m","tools":[{"name":"f","input_schema":{"type":"object"}}]}`), want: FieldNotAllowed, detail: "fallbacks[1].tools"},
		{name: "mcp_servers in a fallback", api: AnthropicMessages,
			body: fb(`{"model":"m","mcp_servers":[{"type":"url","url":"https://evil.example"}]}`), want: MCPServersRefused, detail: "fallbacks[1].mcp_servers"},
		{name: "container in a fallback", api: AnthropicMessages, body: fb(`{"model":"m","container":"c1"}`), want: ContainerRefused, detail: "fallbacks[1].container"},
		{name: "system in a fallback", api: AnthropicMessages, body: fb(`{"model":"m","system":"be evil"}`), want: FieldNotAllowed, detail: "fallbacks[1].system"},
		{name: "model and max_tokens only", api: AnthropicMessages, body: fb(`{"model":"m","max_tokens":99999}`),
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "claude-haiku-5-5", "fallbacks", 1, "model")
				wantField(t, o, "8192", "fallbacks", 1, "max_tokens")
			}},
	})
	for _, code := range []reasons.Code{ServerToolRefused, MCPServersRefused, ContainerRefused, FieldNotAllowed} {
		d := e.Apply(AnthropicMessages, http.Header{}, []byte(fb(map[reasons.Code]string{
			ServerToolRefused: `{"tools":[{"type":"web_fetch_20250910"}]}`, MCPServersRefused: `{"mcp_servers":[]}`,
			ContainerRefused: `{"container":{}}`, FieldNotAllowed: `{"metadata":{}}`,
		}[code])))
		if d.Refusal == nil || d.Refusal.Code != code {
			t.Fatalf("fallback refusal = %+v, want %s", d.Refusal, code)
		}
		// The agent reads the same anet: sentence as for the top-level field (E9).
		if !strings.HasPrefix(d.Refusal.Message(), "anet: "+reasons.Text(code)) {
			t.Errorf("refusal message %q does not start with the rule's sentence", d.Refusal.Message())
		}
	}
}

func TestAnthropicResolveModelE2(t *testing.T) {
	cat, err := LoadCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"", "claude-haiku-5-5"}, {"sonnet", "claude-sonnet-5-5"}, {"opus", "claude-opus-5-5"},
		{"haiku", "claude-haiku-5-5"}, {"best", "claude-opus-5-5"}, {"default", "claude-sonnet-5-5"},
		{"opusplan", "claude-opus-5-5"}, {"fable", "claude-haiku-5-5"}, {"sonnet[1m]", "claude-sonnet-5-5"},
		{"claude-opus-5-5", "claude-opus-5-5"},
	} {
		t.Run(c.in, func(t *testing.T) {
			p, err := cat.Resolve("anthropic", c.in)
			if err != nil || p.ID != c.want {
				t.Fatalf("Resolve(anthropic, %q) = %q, %v, want %q", c.in, p.ID, err, c.want)
			}
		})
	}
	t.Run("openai cheapest", func(t *testing.T) {
		if p, err := cat.Resolve("openai", ""); err != nil || p.ID != "gpt-6-luna" {
			t.Fatalf("Resolve(openai, \"\") = %q, %v, want gpt-6-luna", p.ID, err)
		}
	})
	t.Run("1m on a model without it", func(t *testing.T) {
		if _, err := cat.Resolve("anthropic", "haiku[1m]"); err == nil {
			t.Fatal("Resolve(haiku[1m]) = nil error, want refusal")
		}
	})
	t.Run("custom without model is no_model", func(t *testing.T) {
		_, err := cat.Resolve("", "")
		if err == nil || !strings.Contains(err.Error(), "no_model") {
			t.Fatalf("Resolve(custom, \"\") = %v, want no_model", err)
		}
	})
	t.Run("1m adds the beta", func(t *testing.T) {
		e := mustEngine(t, "claude", "", "sonnet[1m]")
		d := e.Apply(AnthropicMessages, http.Header{}, []byte(`{`+userMsg+`}`))
		if d.Refusal != nil || !strings.Contains(d.Header.Get("anthropic-beta"), betaContext1M) {
			t.Fatalf("anthropic-beta = %q, want %s", d.Header.Get("anthropic-beta"), betaContext1M)
		}
	})
}

// E2: the pinned model's constraints (haiku-5-5 is the cheapest, so the default) are met.
func TestAnthropicPinnedConstraintsE2(t *testing.T) {
	haiku := mustEngine(t, "claude", "", "")
	runRules(t, haiku, []ruleCase{
		{name: "thinking enabled to adaptive", api: AnthropicMessages, body: `{` + userMsg + `,"thinking":{"type":"enabled","budget_tokens":4000}}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "adaptive", "thinking", "type")
				wantAbsent(t, o, "thinking", "budget_tokens")
			}},
		{name: "thinking adaptive kept", api: AnthropicMessages, body: `{` + userMsg + `,"thinking":{"type":"adaptive"}}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "adaptive", "thinking", "type") }},
		{name: "sampling dropped", api: AnthropicMessages, body: `{` + userMsg + `,"temperature":0.2,"top_p":0.9,"top_k":5}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantAbsent(t, o, "temperature")
				wantAbsent(t, o, "top_p")
				wantAbsent(t, o, "top_k")
			}},
		{name: "assistant prefill refused", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"{"}]}`, want: PrefillRefused, detail: "messages[1]"},
	})
	opus := mustEngine(t, "claude", "", "opus")
	runRules(t, opus, []ruleCase{
		{name: "opus keeps sampling", api: AnthropicMessages, body: `{` + userMsg + `,"temperature":0.2}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "0.2", "temperature") }},
		{name: "opus allows prefill", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"{"}]}`},
	})
}

// E3: every output-token field capped at 8192, set when missing, thinking budget kept valid.
func TestAnthropicOutputCapE3(t *testing.T) {
	opus := mustEngine(t, "claude", "", "opus")
	mt := func(want string) func(*testing.T, map[string]any, http.Header) {
		return func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, want, "max_tokens") }
	}
	runRules(t, opus, []ruleCase{
		{name: "claude code 128000 capped", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":128000}`, check: mt("8192")},
		{name: "missing set", api: AnthropicMessages, body: `{` + userMsg + `}`, check: mt("8192")},
		{name: "edge 8192 kept", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":8192}`, check: mt("8192")},
		{name: "edge 8193 capped", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":8193}`, check: mt("8192")},
		{name: "small kept", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":100}`, check: mt("100")},
		{name: "huge integer capped", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":99999999999999999999}`, want: FieldInvalid, detail: "max_tokens"},
		{name: "string refused", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":"8192"}`, want: FieldInvalid, detail: "max_tokens"},
		{name: "zero refused", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":0}`, want: FieldInvalid, detail: "max_tokens"},
		{name: "fraction refused", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":100.5}`, want: FieldInvalid, detail: "max_tokens"},
		{name: "count_tokens not set", api: AnthropicCountTokens, body: `{` + userMsg + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantAbsent(t, o, "max_tokens") }},
		{name: "count_tokens refuses max_tokens", api: AnthropicCountTokens, body: `{` + userMsg + `,"max_tokens":5}`, want: FieldNotAllowed, detail: "max_tokens"},
		{name: "budget above cap lowered", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":128000,"thinking":{"type":"enabled","budget_tokens":32000}}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "8192", "max_tokens")
				wantField(t, o, "8191", "thinking", "budget_tokens")
			}},
		{name: "budget below 1024 raised", api: AnthropicMessages, body: `{` + userMsg + `,"thinking":{"type":"enabled","budget_tokens":500}}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "1024", "thinking", "budget_tokens")
			}},
		{name: "no room for a budget drops thinking", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":1024}}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantAbsent(t, o, "thinking") }},
		{name: "budget 1024 with max 1025 valid", api: AnthropicMessages, body: `{` + userMsg + `,"max_tokens":1025,"thinking":{"type":"enabled","budget_tokens":4000}}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "1024", "thinking", "budget_tokens")
			}},
		{name: "budget not a number", api: AnthropicMessages, body: `{` + userMsg + `,"thinking":{"type":"enabled","budget_tokens":"x"}}`, want: FieldInvalid, detail: "budget_tokens"},
	})
}

// E4: provider-run tools refused by an allow-list of client tool types, also in history.
func TestAnthropicServerToolsE4(t *testing.T) {
	e := mustEngine(t, "claude", "", "opus")
	tool := func(typ string) string {
		return `{` + userMsg + `,"tools":[{"name":"t","input_schema":{"type":"object"}},{"type":"` + typ + `","name":"x"}]}`
	}
	var cases []ruleCase
	for _, typ := range []string{"web_search_20250305", "web_fetch_20250910", "code_execution_20250825", "tool_search_tool_regex_20251119", "advisor_20260301", "mcp_toolset", "bash_code_execution_x", "something_new"} {
		cases = append(cases, ruleCase{name: "refuse " + typ, api: AnthropicMessages, body: tool(typ), want: ServerToolRefused, detail: `tools[1].type "` + typ})
	}
	for _, typ := range []string{"custom", "bash_20250124", "text_editor_20250728", "computer_20250124", "memory_20250818", "computer_toolset_20260101", "browser_toolset_20260101"} {
		cases = append(cases, ruleCase{name: "allow " + typ, api: AnthropicMessages, body: tool(typ)})
	}
	hist := func(block string) string {
		return `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"x"},` + block + `]},{"role":"user","content":"go"}]}`
	}
	cases = append(cases,
		ruleCase{name: "history server_tool_use", api: AnthropicMessages, body: hist(`{"type":"server_tool_use","id":"s","name":"web_search","input":{}}`), want: BlockRefused, detail: `messages[1].content[1].type "server_tool_use"`},
		ruleCase{name: "history web_search_tool_result", api: AnthropicMessages, body: hist(`{"type":"web_search_tool_result","tool_use_id":"s","content":[]}`), want: BlockRefused, detail: "web_search_tool_result"},
		ruleCase{name: "history mcp_tool_use", api: AnthropicMessages, body: hist(`{"type":"mcp_tool_use","id":"m"}`), want: BlockRefused, detail: "mcp_tool_use"},
		ruleCase{name: "history container_upload", api: AnthropicMessages, body: hist(`{"type":"container_upload","file_id":"f"}`), want: BlockRefused, detail: "container_upload"},
		ruleCase{name: "nested in tool_result", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"},{"type":"code_execution_tool_result"}]}]}]}`, want: BlockRefused, detail: "content[0].content[1]"},
		ruleCase{name: "system non-text block", api: AnthropicMessages, body: `{` + userMsg + `,"system":[{"type":"text","text":"a"},{"type":"web_search_tool_result"}]}`, want: BlockRefused, detail: "system[1]"},
		ruleCase{name: "count_tokens tools too", api: AnthropicCountTokens, body: `{` + userMsg + `,"tools":[{"type":"web_fetch_20250910","name":"f"}]}`, want: ServerToolRefused},
		ruleCase{name: "tools not array", api: AnthropicMessages, body: `{` + userMsg + `,"tools":{"type":"web_search_20250305"}}`, want: FieldInvalid},
		ruleCase{name: "client history ok", api: AnthropicMessages, body: hist(`{"type":"tool_use","id":"t","name":"Bash","input":{}},{"type":"thinking","thinking":"x","signature":"s"}`)},
	)
	runRules(t, e, cases)
}

// E5: mcp_servers, container and media by reference refused, recursively.
func TestAnthropicMediaAndFieldsE5(t *testing.T) {
	e := mustEngine(t, "claude", "", "opus")
	img := func(src string) string {
		return `{"messages":[{"role":"user","content":[{"type":"image","source":` + src + `}]}]}`
	}
	runRules(t, e, []ruleCase{
		{name: "mcp_servers", api: AnthropicMessages, body: `{` + userMsg + `,"mcp_servers":[{"type":"url","url":"https://x"}]}`, want: MCPServersRefused},
		{name: "mcp_servers empty too", api: AnthropicMessages, body: `{` + userMsg + `,"mcp_servers":[]}`, want: MCPServersRefused},
		{name: "container", api: AnthropicMessages, body: `{` + userMsg + `,"container":"c_1"}`, want: ContainerRefused},
		{name: "count_tokens mcp_servers", api: AnthropicCountTokens, body: `{` + userMsg + `,"mcp_servers":[]}`, want: MCPServersRefused},
		{name: "image url", api: AnthropicMessages, body: img(`{"type":"url","url":"https://evil/x.png"}`), want: MediaRefused, detail: `source.type "url"`},
		{name: "image file", api: AnthropicMessages, body: img(`{"type":"file","file_id":"f"}`), want: MediaRefused, detail: `"file"`},
		{name: "image base64", api: AnthropicMessages, body: img(`{"type":"base64","media_type":"image/png","data":"AA=="}`)},
		{name: "image source missing", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":[{"type":"image"}]}]}`, want: FieldInvalid},
		{name: "document url", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://x"}}]}]}`, want: MediaRefused},
		{name: "document text", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}]}]}`},
		{name: "document content nested url image", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"content","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://x"}}]}}]}]}`, want: MediaRefused, detail: "source.content[1]"},
		{name: "tool_result nested url image", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"url","url":"https://x"}}]}]}]}`, want: MediaRefused, detail: "content[0].content[0]"},
		{name: "repeated: second message", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"AA=="}}]},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"x"}}]}]}`, want: MediaRefused, detail: "messages[2]"},
		{name: "container_upload block", api: AnthropicMessages, body: `{"messages":[{"role":"user","content":[{"type":"container_upload","file_id":"f"}]}]}`, want: BlockRefused},
		{name: "unknown top-level field", api: AnthropicMessages, body: `{` + userMsg + `,"speed":"fast"}`, want: FieldNotAllowed, detail: "speed"},
	})
}

// E7: header allow-list and beta reduction, with the body fields of dropped betas dropped.
func TestAnthropicHeadersE7(t *testing.T) {
	e := mustEngine(t, "claude", "", "opus")
	claudeBetas := "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24"
	in := hdr("Authorization", "Bearer placeholder", "X-Api-Key", "agent-key", "Cookie", "a=b",
		"Anthropic-Workspace-Id", "ws", "X-Forwarded-For", "1.2.3.4", "Proxy-Authorization", "Basic x",
		"Connection", "keep-alive", "Keep-Alive", "1", "Te", "trailers", "Transfer-Encoding", "chunked",
		"Accept-Encoding", "gzip, deflate, br, zstd", "Anthropic-Beta", claudeBetas,
		"Anthropic-Beta", "files-api-2025-04-14", "X-Stainless-Os", "Linux", "Accept", "application/json",
		"Anthropic-Version", "2023-06-01", "OpenAI-Organization", "org", "Forwarded", "for=x", "Via", "1.1 x")
	runRules(t, e, []ruleCase{
		{name: "claude code request", api: AnthropicMessages, header: in,
			body: `{` + userMsg + `,"context_management":{"edits":[]},"output_config":{"effort":"high"},"tools":[{"name":"a","input_schema":{},"defer_loading":true}]}`,
			check: func(t *testing.T, o map[string]any, h http.Header) {
				for _, k := range []string{"Authorization", "X-Api-Key", "Cookie", "Anthropic-Workspace-Id", "X-Forwarded-For", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Transfer-Encoding", "X-Stainless-Os", "Openai-Organization", "Forwarded", "Via"} {
					if v := h.Values(k); len(v) > 0 {
						t.Errorf("header %s = %q, want absent", k, v)
					}
				}
				if got := h.Get("Accept-Encoding"); got != "identity" {
					t.Errorf("Accept-Encoding = %q, want identity", got)
				}
				want := "claude-code-20250219,context-management-2025-06-27,effort-2025-11-24,interleaved-thinking-2025-05-14"
				if got := h.Get("Anthropic-Beta"); got != want {
					t.Errorf("anthropic-beta = %q, want %q", got, want)
				}
				if h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Content-Type") != "application/json" || h.Get("Accept") != "application/json" {
					t.Errorf("headers = %v, want anthropic-version, content-type and accept kept", h)
				}
				wantField(t, o, "high", "output_config", "effort")
				if at(o, "context_management") == nil {
					t.Errorf("context_management dropped though its beta was kept")
				}
				wantAbsent(t, o, "tools", 0, "defer_loading")
			}},
		{name: "fields of absent betas dropped", api: AnthropicMessages, header: hdr("anthropic-beta", "context-1m-2025-08-07"),
			body: `{` + userMsg + `,"context_management":{"edits":[]},"output_config":{"effort":"low","format":{"type":"json_schema"}}}`,
			check: func(t *testing.T, o map[string]any, h http.Header) {
				wantAbsent(t, o, "context_management")
				wantAbsent(t, o, "output_config", "effort")
				wantField(t, o, "json_schema", "output_config", "format", "type")
				if b := h.Get("Anthropic-Beta"); b != "" {
					t.Errorf("anthropic-beta = %q, want none (context-1m only with a [1m] pin)", b)
				}
			}},
		{name: "effort alone dropped leaves no output_config", api: AnthropicMessages, body: `{` + userMsg + `,"output_config":{"effort":"max"}}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantAbsent(t, o, "output_config") }},
		{name: "anthropic-version default", api: AnthropicMessages, body: `{` + userMsg + `}`,
			check: func(t *testing.T, _ map[string]any, h http.Header) {
				if h.Get("Anthropic-Version") != defaultAnthropicVer {
					t.Errorf("anthropic-version = %q, want %s", h.Get("Anthropic-Version"), defaultAnthropicVer)
				}
			}},
		{name: "anthropic-version garbage", api: AnthropicMessages, header: hdr("Anthropic-Version", "2023-06-01\r\nX: y"), body: `{` + userMsg + `}`, want: HeaderInvalid, detail: "anthropic-version"},
		{name: "anthropic-version twice", api: AnthropicMessages, header: hdr("Anthropic-Version", "2023-06-01", "Anthropic-Version", "2024-01-01"), body: `{` + userMsg + `}`, want: HeaderInvalid},
	})
}

// E8: the body is exactly one uncompressed JSON object.
func TestBodyShapeE8(t *testing.T) {
	for _, eng := range []struct {
		name string
		e    *Engine
		api  API
	}{{"anthropic", mustEngine(t, "claude", "", "opus"), AnthropicMessages}, {"openai", mustEngine(t, "codex", "", ""), OpenAIResponses}} {
		t.Run(eng.name, func(t *testing.T) {
			runRules(t, eng.e, []ruleCase{
				{name: "gzip", api: eng.api, header: hdr("Content-Encoding", "gzip"), body: `{}`, want: BodyEncoded, detail: "gzip"},
				{name: "br second value", api: eng.api, header: hdr("Content-Encoding", "identity", "Content-Encoding", "br"), body: `{}`, want: BodyEncoded},
				{name: "identity ok", api: eng.api, header: hdr("Content-Encoding", "identity"), body: `{}`},
				{name: "array", api: eng.api, body: `[{}]`, want: BodyNotObject, detail: "an array"},
				{name: "null", api: eng.api, body: `null`, want: BodyNotObject},
				{name: "string", api: eng.api, body: `"x"`, want: BodyNotObject},
				{name: "two objects", api: eng.api, body: `{} {}`, want: BodyNotJSON, detail: "after"},
				{name: "trailing garbage", api: eng.api, body: `{}x`, want: BodyNotJSON},
				{name: "trailing whitespace ok", api: eng.api, body: "{}\n\t "},
				{name: "empty", api: eng.api, body: ``, want: BodyNotJSON},
				{name: "truncated", api: eng.api, body: `{"model":`, want: BodyNotJSON},
				{name: "duplicate model key collapses to pinned", api: eng.api, body: `{"model":"a","model":"b"}`,
					check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, eng.e.Model(), "model") }},
			})
		})
	}
}

func TestRouteAllowListE4(t *testing.T) {
	claude := mustEngine(t, "claude", "", "")
	codex := mustEngine(t, "codex", "", "")
	custom := mustEngine(t, "opencode", "https://llm.example.com/api/v1", "m-1")
	for _, c := range []struct {
		name         string
		e            *Engine
		method, path string
		h            http.Header
		want         API
	}{
		{"messages", claude, "POST", "/v1/messages", nil, AnthropicMessages},
		{"count_tokens", claude, "POST", "/v1/messages/count_tokens", nil, AnthropicCountTokens},
		{"anthropic models", claude, "GET", "/v1/models", nil, AnthropicModels},
		{"batches", claude, "POST", "/v1/messages/batches", nil, ""},
		{"files", claude, "POST", "/v1/files", nil, ""},
		{"files list", claude, "GET", "/v1/files", nil, ""},
		{"model by id", claude, "GET", "/v1/models/claude-opus-5-5", nil, ""},
		{"messages GET", claude, "GET", "/v1/messages", nil, ""},
		{"messages trailing slash", claude, "POST", "/v1/messages/", nil, ""},
		{"double slash", claude, "POST", "/v1//messages", nil, ""},
		{"dot segment", claude, "POST", "/v1/files/../messages", nil, ""},
		{"organizations", claude, "GET", "/v1/organizations/me", nil, ""},
		{"responses on claude", claude, "POST", "/v1/responses", nil, ""},
		{"responses", codex, "POST", "/v1/responses", nil, OpenAIResponses},
		{"compact", codex, "POST", "/v1/responses/compact", nil, OpenAICompact},
		{"chat", codex, "POST", "/v1/chat/completions", nil, OpenAIChat},
		{"openai models", codex, "GET", "/v1/models", nil, OpenAIModels},
		{"uploads", codex, "POST", "/v1/uploads", nil, ""},
		{"openai files", codex, "POST", "/v1/files", nil, ""},
		{"openai batches", codex, "POST", "/v1/batches", nil, ""},
		{"stored response", codex, "GET", "/v1/responses/resp_1", nil, ""},
		{"websocket", codex, "GET", "/v1/responses", hdr("Upgrade", "websocket", "Connection", "Upgrade"), ""},
		{"messages on codex", codex, "POST", "/v1/messages", nil, ""},
		{"custom anthropic", custom, "POST", "/v1/messages", nil, AnthropicMessages},
		{"custom openai", custom, "POST", "/v1/chat/completions", nil, OpenAIChat},
		{"custom models anthropic", custom, "GET", "/v1/models", hdr("anthropic-version", "2023-06-01"), AnthropicModels},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := c.h
			if h == nil {
				h = http.Header{}
			}
			api, r := c.e.Route(c.method, c.path, h)
			if api != c.want {
				t.Fatalf("Route(%s %s) = %q, want %q", c.method, c.path, api, c.want)
			}
			if c.want == "" && (r == nil || r.Code != EndpointNotAllowed || r.Status != http.StatusNotFound) {
				t.Fatalf("Route(%s %s) refusal = %+v, want %s with 404", c.method, c.path, r, EndpointNotAllowed)
			}
		})
	}
	t.Run("custom base path", func(t *testing.T) {
		p, q := custom.UpstreamPath(OpenAIChat, "x=1")
		if p != "/api/v1/chat/completions" || q != "" {
			t.Fatalf("UpstreamPath = %q, %q, want /api/v1/chat/completions and no query", p, q)
		}
		p, q = claude.UpstreamPath(AnthropicMessages, "beta=true")
		if p != "/v1/messages" || q != "beta=true" {
			t.Fatalf("UpstreamPath = %q, %q, want /v1/messages?beta=true", p, q)
		}
	})
}
