package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"anet.dev/anet/pkg/localca"
)

// chatHost is the operator's api_base host in the real-agent tests: a name of its own (the
// test CA covers it), redirected by the test-built egress to chatFake's loopback port.
const chatHost = "llm.anet.test"

// chatFake is an OpenAI-compatible Chat Completions service, the operator's api_base for
// opencode and openclaw (E10). It is scripted, not timed: a request without a tool result
// gets one tool call (the shell tool the agent offers, running `pwd`), a request that carries
// the tool's result gets the final answer. Each streamed answer reports chatUsage. It records
// every request and notes every broken rule (key, model, cap, placeholder).
type chatFake struct {
	fakeUpstream
	key, pinned string
	answer      string
	cap         int
	shellTools  map[string]string // tool name → JSON arguments that run `pwd`
	// toolCalls and finals are guarded by fakeUpstream.mu.
	toolCalls, finals int
}

// shellProbe is the scripted tool call's command: where the tool runs (E10: in the run's
// /work) and the length of the placeholder variable, never its value, which must not reach
// the upstream (E1); a length proves the placeholder is in the sandbox.
const (
	shellProbe     = `echo "cwd=$(pwd) ph=${#ANET_PLACEHOLDER}"`
	shellProbeJSON = `"echo \"cwd=$(pwd) ph=${#ANET_PLACEHOLDER}\""`
)

// chatUsage is what each streamed chatFake answer reports: at chatPrices, 3000×0.5 + 100×2 =
// 1700 µ per request (K1).
const (
	chatPromptTokens, chatCompletionTokens = 3000, 100
	chatCostPerRequest                     = 1700
)

// chatModels is the operator's models override for the api_base service: prices (K1) and an
// output cap below the node's 8192 (E3).
func chatModels(model string, cap int) string {
	return fmt.Sprintf("providers:\n  custom:\n    models:\n      %s: {input_price: \"0.5\", output_price: 2, max_output_tokens: %d}\n", model, cap)
}

func newChatFake(t *testing.T, ca *localca.Authority, key, pinned, answer string, cap int) *chatFake {
	t.Helper()
	f := &chatFake{key: key, pinned: pinned, answer: answer, cap: cap, shellTools: map[string]string{
		"bash": `{"command":` + shellProbeJSON + `,"description":"Print the working directory"}`, // opencode
		"exec": `{"command":` + shellProbeJSON + `}`,                                             // openclaw
	}}
	f.start(t, ca, f.serve)
	return f
}

func (f *chatFake) serve(w http.ResponseWriter, r *http.Request) {
	body := f.record(r)
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		f.problem("%s: Authorization is not the operator's key (E1)", r.URL.Path)
		openAIError(w, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		// Not a rule: an agent may probe (GET /v1/models); the API answers 404.
		openAIError(w, 404, "invalid_request_error", "unknown_url", "Unknown request URL")
		return
	}
	o, err := decodeBody(body)
	if err != nil {
		openAIError(w, 400, "invalid_request_error", "invalid_json", "We could not parse the JSON body of your request.")
		return
	}
	if o["model"] != f.pinned {
		f.problem("model %v, want pinned %q (E2)", o["model"], f.pinned)
	}
	capped := false
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if v, ok := o[k]; ok {
			n, ok := jsonInt(v)
			capped = ok && n <= int64(f.cap)
			if !capped {
				f.problem("%s = %v, want at most the model's cap %d (E3)", k, v, f.cap)
			}
		}
	}
	if !capped {
		f.problem("no output cap at or below %d in the request (E3)", f.cap)
	}
	if o["stream"] != true {
		f.problem("stream = %v: the agents stream; the fake answers only streams", o["stream"])
		openAIError(w, 400, "invalid_request_error", "stream_required", "stream required")
		return
	}
	f.stream(w, o)
}

// toolResult reports whether the conversation already holds a tool's result.
func toolResult(o map[string]any) bool {
	msgs, _ := o["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "tool" {
			return true
		}
	}
	return false
}

// offeredShell returns the first tool of the request that the fake knows how to call.
func (f *chatFake) offeredShell(o map[string]any) (name, args string) {
	tools, _ := o["tools"].([]any)
	for _, tl := range tools {
		tm, _ := tl.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		n, _ := fn["name"].(string)
		if a, ok := f.shellTools[n]; ok {
			return n, a
		}
	}
	return "", ""
}

func (f *chatFake) stream(w http.ResponseWriter, o map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-real-1", "object": "chat.completion.chunk", "created": 1764547200, "model": f.pinned,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	name, args := f.offeredShell(o)
	f.mu.Lock()
	callTool := !toolResult(o) && name != "" && f.toolCalls == 0
	if callTool {
		f.toolCalls++
	} else {
		f.finals++
	}
	f.mu.Unlock()
	if callTool {
		send(chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": "call_real_1", "type": "function", "function": map[string]any{"name": name, "arguments": args}}}}, nil))
		send(chunk(map[string]any{}, "tool_calls"))
	} else {
		send(chunk(map[string]any{"role": "assistant", "content": f.answer}, nil))
		send(chunk(map[string]any{}, "stop"))
	}
	send(map[string]any{"id": "chatcmpl-real-1", "object": "chat.completion.chunk", "created": 1764547200, "model": f.pinned, "choices": []any{},
		"usage": map[string]any{"prompt_tokens": chatPromptTokens, "completion_tokens": chatCompletionTokens, "total_tokens": chatPromptTokens + chatCompletionTokens}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// toolOutput returns the tool results the agent sent back (the shell probe's output) and
// how many chat requests there were.
func (f *chatFake) toolOutput() (out string, n int) {
	for _, r := range f.Requests() {
		if r.Path != "/v1/chat/completions" {
			continue
		}
		n++
		o, err := decodeBody(r.Body)
		if err != nil {
			continue
		}
		msgs, _ := o["messages"].([]any)
		for _, m := range msgs {
			mm, _ := m.(map[string]any)
			if mm["role"] != "tool" {
				continue
			}
			c, _ := json.Marshal(mm["content"])
			out += string(c)
		}
	}
	return out, n
}
