package rules

import (
	"net/http"
	"testing"
)

const respInput = `"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}]`
const chatMsgs = `"messages":[{"role":"user","content":"hi"}]`

// E2, E3, E6 on the Responses API as Codex sends it, and on compact and chat.
func TestOpenAIPinCapStoreE2E3E6(t *testing.T) {
	e := mustEngine(t, "codex", "", "")
	runRules(t, e, []ruleCase{
		{name: "codex request", api: OpenAIResponses,
			body: `{"model":"gpt-6","store":false,"stream":true,"include":["reasoning.encrypted_content"],"reasoning":{"effort":"high"},"prompt_cache_key":"k","client_metadata":{"a":"b"},` + respInput + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "gpt-6-luna", "model")
				wantField(t, o, "8192", "max_output_tokens")
				wantField(t, o, false, "store")
			}},
		{name: "store true forced false", api: OpenAIResponses, body: `{"store":true,` + respInput + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, false, "store") }},
		{name: "store absent set false", api: OpenAIResponses, body: `{` + respInput + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, false, "store") }},
		{name: "max_output_tokens edge 8192", api: OpenAIResponses, body: `{"max_output_tokens":8192}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "8192", "max_output_tokens") }},
		{name: "max_output_tokens 8193 capped", api: OpenAIResponses, body: `{"max_output_tokens":8193}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "8192", "max_output_tokens") }},
		{name: "max_output_tokens negative", api: OpenAIResponses, body: `{"max_output_tokens":-1}`, want: FieldInvalid, detail: "max_output_tokens"},
		{name: "compact pinned, not given a cap", api: OpenAICompact, body: `{"model":"gpt-6",` + respInput + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "gpt-6-luna", "model")
				wantAbsent(t, o, "max_output_tokens")
				wantField(t, o, false, "store")
			}},
		{name: "compact cap kept if sent", api: OpenAICompact, body: `{"max_output_tokens":100000}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "8192", "max_output_tokens") }},
		{name: "previous_response_id", api: OpenAIResponses, body: `{"previous_response_id":"resp_1"}`, want: StorageRefused, detail: "previous_response_id"},
		{name: "previous_response_id null dropped", api: OpenAIResponses, body: `{"previous_response_id":null}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantAbsent(t, o, "previous_response_id") }},
		{name: "background", api: OpenAIResponses, body: `{"background":true}`, want: StorageRefused, detail: "background"},
		{name: "background false dropped", api: OpenAIResponses, body: `{"background":false}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantAbsent(t, o, "background") }},
		{name: "conversation", api: OpenAIResponses, body: `{"conversation":"conv_1"}`, want: StorageRefused, detail: "conversation"},
		{name: "stored prompt", api: OpenAIResponses, body: `{"prompt":{"id":"pmpt_1"}}`, want: StorageRefused, detail: "prompt"},
		{name: "compact previous_response_id", api: OpenAICompact, body: `{"previous_response_id":"resp_1"}`, want: StorageRefused},
		{name: "item_reference", api: OpenAIResponses, body: `{"input":[{"type":"item_reference","id":"msg_1"}]}`, want: StorageRefused, detail: "input[0]"},
		{name: "unknown field", api: OpenAIResponses, body: `{"moderation":"off"}`, want: FieldNotAllowed, detail: "moderation"},
		{name: "chat pinned capped", api: OpenAIChat, body: `{"model":"gpt-6",` + chatMsgs + `,"max_completion_tokens":50000,"max_tokens":9000,"n":4}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "gpt-6-luna", "model")
				wantField(t, o, "8192", "max_completion_tokens")
				wantField(t, o, "8192", "max_tokens")
				wantField(t, o, "1", "n")
				wantField(t, o, false, "store")
			}},
		{name: "chat missing cap set", api: OpenAIChat, body: `{` + chatMsgs + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "8192", "max_completion_tokens")
				wantAbsent(t, o, "max_tokens")
			}},
		{name: "chat legacy max_tokens only kept alone", api: OpenAIChat, body: `{` + chatMsgs + `,"max_tokens":100}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "100", "max_tokens")
				wantAbsent(t, o, "max_completion_tokens")
			}},
		{name: "chat n zero", api: OpenAIChat, body: `{"n":0}`, want: FieldInvalid, detail: "n must"},
		{name: "chat store true forced false", api: OpenAIChat, body: `{"store":true}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, false, "store") }},
		{name: "responses mcp_servers", api: OpenAIResponses, body: `{"mcp_servers":[]}`, want: MCPServersRefused},
		{name: "chat container", api: OpenAIChat, body: `{"container":"c"}`, want: ContainerRefused},
		{name: "chat audio output refused", api: OpenAIChat, body: `{"modalities":["audio"]}`, want: FieldNotAllowed, detail: "modalities"},
	})
	custom := mustEngine(t, "opencode", "https://llm.example.com/v1", "m-1")
	runRules(t, custom, []ruleCase{
		{name: "custom chat sets max_tokens", api: OpenAIChat, body: `{"model":"other",` + chatMsgs + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) {
				wantField(t, o, "m-1", "model")
				wantField(t, o, "8192", "max_tokens")
			}},
		{name: "custom anthropic pinned", api: AnthropicMessages, body: `{"model":"other",` + userMsg + `}`,
			check: func(t *testing.T, o map[string]any, _ http.Header) { wantField(t, o, "m-1", "model") }},
	})
}

// E4: hosted tools refused by an allow-list of client tool types, also nested and in history.
func TestOpenAIHostedToolsE4(t *testing.T) {
	e := mustEngine(t, "codex", "", "")
	tools := func(t string) string { return `{"tools":[{"type":"function","name":"f","parameters":{}},` + t + `]}` }
	var cases []ruleCase
	for _, typ := range []string{"web_search", "web_search_preview", "web_search_preview_2025_03_11", "file_search", "code_interpreter", "image_generation", "mcp", "programmatic_tool_calling", "future_tool"} {
		cases = append(cases, ruleCase{name: "refuse " + typ, api: OpenAIResponses, body: tools(`{"type":"` + typ + `"}`), want: ServerToolRefused, detail: `tools[1].type "` + typ})
	}
	cases = append(cases,
		ruleCase{name: "tool_search server", api: OpenAIResponses, body: tools(`{"type":"tool_search","execution":"server"}`), want: ServerToolRefused, detail: "execution"},
		ruleCase{name: "tool_search client", api: OpenAIResponses, body: tools(`{"type":"tool_search","execution":"client"}`)},
		ruleCase{name: "shell container", api: OpenAIResponses, body: tools(`{"type":"shell","environment":{"type":"container_auto"}}`), want: ServerToolRefused, detail: "environment"},
		ruleCase{name: "shell local", api: OpenAIResponses, body: tools(`{"type":"shell","environment":{"type":"local"}}`)},
		ruleCase{name: "namespace nested web_search", api: OpenAIResponses, body: tools(`{"type":"namespace","name":"n","tools":[{"type":"function","name":"g"},{"type":"web_search"}]}`), want: ServerToolRefused, detail: "tools[1].tools[1]"},
		// Codex "responses lite": tools ride in an input item and face the same allowlist.
		ruleCase{name: "additional_tools item with client tools", api: OpenAIResponses, body: `{"input":[{"type":"additional_tools","role":"developer","tools":[{"type":"function","name":"f"},{"type":"namespace","name":"n","tools":[{"type":"custom","name":"exec"}]}]}]}`},
		ruleCase{name: "additional_tools item with hosted tool", api: OpenAIResponses, body: `{"input":[{"type":"additional_tools","role":"developer","tools":[{"type":"function","name":"f"},{"type":"web_search"}]}]}`, want: ServerToolRefused, detail: "input[0].tools[1]"},
		ruleCase{name: "client tools", api: OpenAIResponses, body: `{"tools":[{"type":"function","name":"f"},{"type":"custom","name":"c"},{"type":"local_shell"},{"type":"apply_patch"},{"type":"computer_use_preview"},{"type":"namespace","tools":[{"type":"function","name":"g"}]}]}`},
		ruleCase{name: "history web_search_call", api: OpenAIResponses, body: `{"input":[{"role":"user","content":"q"},{"type":"web_search_call","id":"ws","status":"completed"}]}`, want: BlockRefused, detail: `input[1].type "web_search_call"`},
		ruleCase{name: "history mcp_call", api: OpenAIResponses, body: `{"input":[{"type":"mcp_call","id":"m"}]}`, want: BlockRefused},
		ruleCase{name: "history code_interpreter_call", api: OpenAIResponses, body: `{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"code_interpreter_call"}]}`, want: BlockRefused, detail: "input[1]"},
		ruleCase{name: "history client items", api: OpenAIResponses, body: `{"input":[{"type":"reasoning","encrypted_content":"x","summary":[]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"},{"type":"compaction","encrypted_content":"e"}]}`},
		ruleCase{name: "chat web_search_options", api: OpenAIChat, body: `{"web_search_options":{}}`, want: ServerToolRefused, detail: "web_search_options"},
		ruleCase{name: "chat hosted tool", api: OpenAIChat, body: `{"tools":[{"type":"function","function":{"name":"f"}},{"type":"web_search"}]}`, want: ServerToolRefused, detail: "tools[1]"},
		ruleCase{name: "chat history tool call type", api: OpenAIChat, body: `{"messages":[{"role":"assistant","tool_calls":[{"type":"function","id":"1"},{"type":"mcp","id":"2"}]}]}`, want: BlockRefused, detail: "tool_calls[1]"},
	)
	runRules(t, e, cases)
}

// E5: media only inline, recursively into function outputs.
func TestOpenAIMediaE5(t *testing.T) {
	e := mustEngine(t, "codex", "", "")
	part := func(p string) string {
		return `{"input":[{"role":"user","content":[{"type":"input_text","text":"a"},` + p + `]}]}`
	}
	runRules(t, e, []ruleCase{
		{name: "image by https url", api: OpenAIResponses, body: part(`{"type":"input_image","image_url":"https://evil/x.png"}`), want: MediaRefused, detail: "content[1].image_url"},
		{name: "image by file_id", api: OpenAIResponses, body: part(`{"type":"input_image","file_id":"file_1"}`), want: MediaRefused, detail: "file_id"},
		{name: "image data url", api: OpenAIResponses, body: part(`{"type":"input_image","image_url":"data:image/png;base64,AA=="}`)},
		{name: "file by url", api: OpenAIResponses, body: part(`{"type":"input_file","file_url":"https://x/a.pdf"}`), want: MediaRefused, detail: "file_url"},
		{name: "file by id", api: OpenAIResponses, body: part(`{"type":"input_file","file_id":"file_1"}`), want: MediaRefused},
		{name: "file inline", api: OpenAIResponses, body: part(`{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,AA=="}`)},
		{name: "function output nested url", api: OpenAIResponses, body: `{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"},{"type":"input_image","image_url":"http://10.0.0.1/x"}]}]}`, want: MediaRefused, detail: "input[0].output[1]"},
		{name: "custom tool output nested file", api: OpenAIResponses, body: `{"input":[{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"input_file","file_id":"f"}]}]}`, want: MediaRefused},
		{name: "computer screenshot url", api: OpenAIResponses, body: `{"input":[{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"https://x"}}]}`, want: MediaRefused},
		{name: "repeated: third item", api: OpenAIResponses, body: `{"input":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AA"}]},{"role":"user","content":[{"type":"input_image","image_url":"https://x"}]}]}`, want: MediaRefused, detail: "input[2]"},
		{name: "chat image url", api: OpenAIChat, body: `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]}`, want: MediaRefused, detail: "image_url"},
		{name: "chat image data", api: OpenAIChat, body: `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}]}`},
		{name: "chat file id", api: OpenAIChat, body: `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}]}`, want: MediaRefused},
		{name: "chat file data", api: OpenAIChat, body: `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,AA","filename":"a.pdf"}}]}]}`},
		{name: "chat tool message nested url", api: OpenAIChat, body: `{"messages":[{"role":"tool","tool_call_id":"c","content":[{"type":"image_url","image_url":{"url":"http://x"}}]}]}`, want: MediaRefused, detail: "messages[0]"},
	})
}

// E7: credential and routing headers stripped on OpenAI too.
func TestOpenAIHeadersE7(t *testing.T) {
	e := mustEngine(t, "codex", "", "")
	in := hdr("Authorization", "Bearer ph", "OpenAI-Organization", "org", "OpenAI-Project", "proj",
		"Chatgpt-Account-Id", "acct", "X-Codex-Beta-Features", "x", "X-Codex-Window-Id", "w",
		"X-Codex-Turn-Metadata", "m", "Cookie", "c", "X-Forwarded-Host", "h", "Accept", "text/event-stream",
		"Accept-Encoding", "zstd", "Openai-Beta", "responses_websockets=2026-02-06", "Session_id", "s")
	runRules(t, e, []ruleCase{{name: "codex headers", api: OpenAIResponses, header: in, body: `{}`,
		check: func(t *testing.T, _ map[string]any, h http.Header) {
			for k := range in {
				if k == "Accept" || k == "Accept-Encoding" {
					continue
				}
				if v := h.Values(k); len(v) > 0 {
					t.Errorf("header %s = %q, want absent", k, v)
				}
			}
			if h.Get("Accept") != "text/event-stream" || h.Get("Accept-Encoding") != "identity" {
				t.Errorf("Accept = %q, Accept-Encoding = %q, want text/event-stream, identity", h.Get("Accept"), h.Get("Accept-Encoding"))
			}
		}}})
}
