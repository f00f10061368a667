package standin

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Usage is what the fake reports an answer used, in the node's token classes: Input excludes
// the cache classes, Output includes Reasoning. Omit sends no usage at all; Cut ends a stream
// before its usage is complete (Anthropic: after message_start; OpenAI: before the last
// event), as a broken connection would.
type Usage struct {
	Input, Output, CacheWrite, CacheRead, Reasoning int64
	Omit, Cut                                       bool
}

// anthropic is the ,"usage":{…} suffix of a Messages answer; final false gives
// message_start's form (the output so far is 1 token).
func (u Usage) anthropic(final bool) string {
	if u.Omit {
		return ""
	}
	out := u.Output
	if !final {
		out = 1
	}
	return fmt.Sprintf(`,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d}`, u.Input, u.CacheWrite, u.CacheRead, out)
}

// responses is the ,"usage":{…} suffix of a Responses answer: input counts cached tokens.
func (u Usage) responses() string {
	if u.Omit {
		return ""
	}
	return fmt.Sprintf(`,"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":%d},"total_tokens":%d}`,
		u.Input+u.CacheRead, u.CacheRead, u.Output, u.Reasoning, u.Input+u.CacheRead+u.Output)
}

// chat is the ,"usage":{…} suffix of a chat completion.
func (u Usage) chat() string {
	if u.Omit {
		return ""
	}
	return fmt.Sprintf(`,"usage":{"prompt_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d},"completion_tokens":%d,"completion_tokens_details":{"reasoning_tokens":%d},"total_tokens":%d}`,
		u.Input+u.CacheRead, u.CacheRead, u.Output, u.Reasoning, u.Input+u.CacheRead+u.Output)
}

func sse(w http.ResponseWriter, fl http.Flusher, event, data string) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
	fl.Flush()
}

// anthropicStream answers a streamed Messages request as api.anthropic.com does: usage in
// message_start (input, cache) and message_delta (final output).
func (f *Upstream) anthropicStream(w http.ResponseWriter, u Usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	sse(w, fl, "message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null%s}}`, f.pinned, u.anthropic(false)))
	if u.Cut {
		return
	}
	sse(w, fl, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	sse(w, fl, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`)
	sse(w, fl, "content_block_stop", `{"type":"content_block_stop","index":0}`)
	delta := `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}`
	if !u.Omit {
		delta += fmt.Sprintf(`,"usage":{"output_tokens":%d}`, u.Output)
	}
	sse(w, fl, "message_delta", delta+"}")
	sse(w, fl, "message_stop", `{"type":"message_stop"}`)
}

// openaiStream answers a streamed Responses or chat request: Responses with usage in
// response.completed; chat with a last chunk of no choices and the usage, sent only when the
// request asked for it (stream_options.include_usage), as api.openai.com does.
func (f *Upstream) openaiStream(w http.ResponseWriter, path string, o map[string]any, u Usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	if path == "/v1/responses" {
		sse(w, fl, "response.created", fmt.Sprintf(`{"type":"response.created","response":{"id":"resp_1","status":"in_progress","model":%q,"output":[],"usage":null}}`, f.pinned))
		sse(w, fl, "response.output_text.delta", `{"type":"response.output_text.delta","item_id":"m1","output_index":0,"content_index":0,"delta":"hello"}`)
		if u.Cut {
			return
		}
		sse(w, fl, "response.completed", fmt.Sprintf(`{"type":"response.completed","response":{"id":"resp_1","status":"completed","model":%q,"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}]%s}}`, f.pinned, u.responses()))
		return
	}
	so, _ := o["stream_options"].(map[string]any)
	withUsage := so["include_usage"] == true
	null := ""
	if withUsage {
		null = `,"usage":null`
	}
	chunk := func(choices string) string {
		return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","model":%q,"choices":%s%s}`, f.pinned, choices, null)
	}
	sse(w, fl, "", chunk(`[{"index":0,"delta":{"role":"assistant","content":"hel"}}]`))
	sse(w, fl, "", chunk(`[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]`))
	if u.Cut {
		return
	}
	if withUsage && !u.Omit {
		b, _ := json.Marshal(json.RawMessage(fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","model":%q,"choices":[]%s}`, f.pinned, u.chat())))
		sse(w, fl, "", string(b))
	}
	sse(w, fl, "", "[DONE]")
}
