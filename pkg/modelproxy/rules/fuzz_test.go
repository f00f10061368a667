//go:build anettest

package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"anet.dev/anet/pkg/modelproxy/upstream"
)

// claudeCodeBody is what claude 2.1.328 -p sends (as the pinned CLI was seen sending it); the
// proxy's tests send it end to end.
const claudeCodeBody = `{"model":"claude-opus-5-5","max_tokens":128000,"thinking":{"type":"adaptive"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"high"},"stream":false,"system":[{"type":"text","text":"You are Claude Code"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}}],"metadata":{"user_id":"u"}}`

// fuzzEngines are the engines and APIs the rewrite target draws from with its first byte.
type fuzzCase struct {
	agent, base, model string
	api                API
}

var fuzzCases = []fuzzCase{
	{"claude", "", "", AnthropicMessages}, {"claude", "", "opus", AnthropicMessages},
	{"claude", "", "", AnthropicCountTokens}, {"codex", "", "", OpenAIResponses},
	{"codex", "", "", OpenAICompact}, {"codex", "", "", OpenAIChat},
	{"opencode", "https://llm.example.com/v1", "m-1", OpenAIChat},
	{"opencode", "https://llm.example.com/v1", "m-1", AnthropicMessages},
}

// E2–E8, K2: for any body, the rewrite either refuses with a reason code and an anet:
// message, or forwards a body that obeys every rule of its API (model pinned, every length
// in [1, cap] and the bound covering them, store false on OpenAI, no remote tool server or
// container) and is a fixpoint: rewritten again it is refused by nothing and comes out the
// same bytes with the same bound.
func FuzzRewrite(f *testing.F) {
	for _, b := range []string{
		`{"model":"claude-opus-5-5","max_tokens":128000,"messages":[{"role":"user","content":"hi"}]}`,
		claudeCodeBody,
		`{"model":"x",` + userMsg + `,"fallbacks":[{"model":"claude-sonnet-5-5","max_tokens":64000},{"model":"evil"}]}`,
		`{` + userMsg + `,"max_tokens":128000,"thinking":{"type":"enabled","budget_tokens":32000}}`,
		`{` + userMsg + `,"max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":1024}}`,
		`{` + userMsg + `,"max_tokens":null,"tools":[{"name":"a","input_schema":{"type":"object"},"model":"x","max_tokens":null}]}`,
		`{"model":"gpt-6","store":false,"stream":true,"include":["reasoning.encrypted_content"],"reasoning":{"effort":"high"},` + respInput + `}`,
		`{"model":"gpt-6",` + chatMsgs + `,"max_completion_tokens":50000,"max_tokens":9000,"n":4,"stream":true}`,
		`{` + chatMsgs + `,"max_tokens":null,"max_completion_tokens":null}`,
		`{"max_output_tokens":null,"previous_response_id":null,"background":false}`,
		`{"input":[{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:x"}]},{"type":"additional_tools","tools":[{"type":"function"}]}]}`,
	} {
		for i := range fuzzCases {
			f.Add(uint8(i), []byte(b))
		}
	}
	engines := make([]*Engine, len(fuzzCases))
	for i, c := range fuzzCases {
		engines[i] = mustEngine(f, c.agent, c.base, c.model)
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		i := int(which) % len(fuzzCases)
		e, api := engines[i], fuzzCases[i].api
		d := e.Apply(api, hdr(), body)
		if d.Refusal != nil {
			if d.Refusal.Code == "" || !strings.HasPrefix(d.Refusal.Message(), "anet: ") || d.Body != nil {
				t.Fatalf("Apply(%q) refusal %+v: want a code, an anet: message and no body", body, d.Refusal)
			}
			return
		}
		o, r := stdObject(d.Body)
		if r != nil {
			t.Fatalf("Apply(%q) forwarded what encoding/json refuses: %s", body, d.Body)
		}
		if o["model"] != e.Model() {
			t.Fatalf("Apply(%q) model = %v, want %s", body, o["model"], e.Model())
		}
		if err := lengthRules(e, api, o, d.MaxOutput); err != nil {
			t.Fatalf("Apply(%q): %v: %s", body, err, d.Body)
		}
		if api.Family() == upstream.FamilyOpenAI && o["store"] != false {
			t.Fatalf("Apply(%q) store = %v, want false", body, o["store"])
		}
		for _, k := range []string{"mcp_servers", "container", "previous_response_id", "background", "conversation", "prompt"} {
			if _, ok := o[k]; ok {
				t.Fatalf("Apply(%q) forwarded %s: %s", body, k, d.Body)
			}
		}
		again := e.Apply(api, hdr(), d.Body)
		if again.Refusal != nil {
			t.Fatalf("Apply(Apply(%q)) = refusal %s, want the same body: %s", body, again.Refusal.Message(), d.Body)
		}
		if !bytes.Equal(again.Body, d.Body) || again.MaxOutput != d.MaxOutput {
			t.Fatalf("rewrite is not a fixpoint for %q:\n once %s (bound %d)\ntwice %s (bound %d)", body, d.Body, d.MaxOutput, again.Body, again.MaxOutput)
		}
	})
}

// stdObject decodes b as exactly one JSON object by encoding/json alone (numbers as
// json.Number), as the codec's own fallback does.
func stdObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var o map[string]any
	if err := dec.Decode(&o); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, errors.New("null, not an object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return o, nil
}
