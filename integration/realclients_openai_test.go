package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"anet.dev/anet/pkg/localca"
)

// openAIFake plays api.openai.com's Responses API over real TLS (the stand-in's CA) and
// HTTP/2 and streams the answer as server-sent events, which standin's Upstream does
// not do for OpenAI. Like the real API it answers 404 for an unknown model and 401 for a
// wrong key; like standin it records every request and notes every broken rule.
type openAIFake struct {
	fakeUpstream
	key    string
	pinned string
	answer string
	// toolCall, when set, may answer a streamed request with a tool call item (the model
	// asking the agent to run one of its tools) instead of the answer message.
	toolCall func(o map[string]any) map[string]any
}

// openAIModels are the ids the fake knows (pkg/modelproxy/rules/models.yaml).
var openAIModels = map[string]bool{"gpt-6": true, "gpt-6-mini": true, "gpt-6-luna": true}

// openAIClientTools are the client-run Responses tool types (pkg/modelproxy/rules/openai.go);
// shell counts only with a local environment, tool_search only with client execution, and a
// namespace by its members. Anything else is a hosted tool the node must have refused (E4).
var openAIClientTools = map[string]bool{
	"function": true, "custom": true, "local_shell": true, "shell": true, "apply_patch": true,
	"computer": true, "computer_use_preview": true, "namespace": true, "tool_search": true,
}

// hostedTools lists the paths of hosted tools in a Responses body: top-level tools and the
// tools Codex sends in `additional_tools` input items, namespaces included.
func hostedTools(o map[string]any) []string {
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		list, _ := v.([]any)
		for i, tl := range list {
			tp := fmt.Sprintf("%s[%d]", path, i)
			tm, _ := tl.(map[string]any)
			typ, _ := tm["type"].(string)
			env, _ := tm["environment"].(map[string]any)
			switch {
			case !openAIClientTools[typ],
				typ == "tool_search" && tm["execution"] != "client",
				typ == "shell" && env != nil && env["type"] != "local":
				out = append(out, fmt.Sprintf("%s (type %q)", tp, typ))
			case typ == "namespace":
				walk(tm["tools"], tp+".tools")
			}
		}
	}
	walk(o["tools"], "tools")
	input, _ := o["input"].([]any)
	for i, it := range input {
		if im, _ := it.(map[string]any); im["type"] == "additional_tools" {
			walk(im["tools"], fmt.Sprintf("input[%d].tools", i))
		}
	}
	return out
}

// codexStreamCost is what one streamed answer of openAIFake costs at gpt-6-luna (K1).
const codexStreamCost = 590

func newOpenAIFake(t *testing.T, ca *localca.Authority, key, pinned, answer string) *openAIFake {
	t.Helper()
	f := &openAIFake{key: key, pinned: pinned, answer: answer}
	f.start(t, ca, f.serve)
	return f
}

func openAIError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg, "param": nil}})
}

func (f *openAIFake) serve(w http.ResponseWriter, r *http.Request) {
	body := f.record(r)
	if r.ProtoMajor != 2 {
		f.problem("%s: HTTP/%d, want HTTP/2", r.URL.Path, r.ProtoMajor)
	}
	if ae := r.Header.Get("Accept-Encoding"); ae != "identity" {
		f.problem("%s: Accept-Encoding %q, want identity", r.URL.Path, ae)
	}
	if r.Header.Get("Authorization") != "Bearer "+f.key || r.Header.Get("X-Api-Key") != "" {
		f.problem("%s: Authorization is not the operator's key (E1)", r.URL.Path)
		openAIError(w, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		f.problem("%s %s: not the Responses API", r.Method, r.URL.Path)
		openAIError(w, 404, "invalid_request_error", "unknown_url", "Unknown request URL")
		return
	}
	o, err := decodeBody(body)
	if err != nil {
		openAIError(w, 400, "invalid_request_error", "invalid_json", "We could not parse the JSON body of your request.")
		return
	}
	model, _ := o["model"].(string)
	if model != f.pinned {
		f.problem("model %q, want pinned %q (E2)", model, f.pinned)
	}
	if !openAIModels[model] {
		openAIError(w, 404, "invalid_request_error", "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model))
		return
	}
	if o["store"] != false {
		f.problem("store = %v, want false (E6)", o["store"])
	}
	if n, ok := jsonInt(o["max_output_tokens"]); !ok || n > 8192 {
		f.problem("max_output_tokens = %v, want set and ≤ 8192 (E3)", o["max_output_tokens"])
	}
	for _, h := range hostedTools(o) {
		f.problem("%s: a hosted tool reached the upstream (E4)", h)
	}
	if o["stream"] != true {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_real_1","object":"response","status":"completed","model":%q,"output":[{"type":"message","id":"msg_real_1","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}]}`, f.pinned, f.answer)
		return
	}
	if f.toolCall != nil {
		if item := f.toolCall(o); item != nil {
			f.streamItem(w, model, item)
			return
		}
	}
	f.stream(w, model)
}

// stream sends the Responses event sequence for one assistant message.
func (f *openAIFake) stream(w http.ResponseWriter, model string) {
	f.streamItem(w, model, map[string]any{"type": "message", "id": "msg_real_1", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": f.answer, "annotations": []any{}}}})
}

// streamItem sends the Responses event sequence for one output item: an assistant message,
// or a tool call, whole in its added and done events.
func (f *openAIFake) streamItem(w http.ResponseWriter, model string, item map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	resp := func(status string, output []any) map[string]any {
		m := map[string]any{"id": "resp_real_1", "object": "response", "status": status, "model": model, "output": output}
		if status == "completed" {
			// codexStreamCost at gpt-6-luna: 1000×0.10 + 4000×0.01 (cached) + 900×0.50 = 590 µ.
			m["usage"] = map[string]any{"input_tokens": 5000, "input_tokens_details": map[string]any{"cached_tokens": 4000},
				"output_tokens": 900, "output_tokens_details": map[string]any{"reasoning_tokens": 300}, "total_tokens": 5900}
		}
		return m
	}
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		var b bytes.Buffer
		json.NewEncoder(&b).Encode(fields)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, strings.TrimSpace(b.String()))
		fl.Flush()
	}
	send("response.created", map[string]any{"response": resp("in_progress", []any{})})
	send("response.in_progress", map[string]any{"response": resp("in_progress", []any{})})
	if item["type"] != "message" {
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	} else {
		send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "message", "id": "msg_real_1", "status": "in_progress", "role": "assistant", "content": []any{}}})
		send("response.content_part.added", map[string]any{"item_id": "msg_real_1", "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		send("response.output_text.delta", map[string]any{"item_id": "msg_real_1", "output_index": 0, "content_index": 0, "delta": f.answer})
		send("response.output_text.done", map[string]any{"item_id": "msg_real_1", "output_index": 0, "content_index": 0, "text": f.answer})
		send("response.content_part.done", map[string]any{"item_id": "msg_real_1", "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": f.answer, "annotations": []any{}}})
	}
	send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	send("response.completed", map[string]any{"response": resp("completed", []any{item})})
}
