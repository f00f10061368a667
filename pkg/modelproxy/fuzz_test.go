//go:build anettest

package modelproxy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"anet.dev/anet/pkg/modelproxy/upstream"
)

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
		o, r := decodeObjectStd(d.Body)
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

// K1: wherever the fast usage path answers, it reads what encoding/json reads, and only from
// an answer encoding/json accepts.
func FuzzFastUsage(f *testing.F) {
	for _, b := range []string{
		`{"id":"msg_1","type":"message","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":40000}}`,
		`{"id":"resp_1","object":"response","usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1000},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":200},"total_tokens":1500}}`,
		`{"id":"c1","object":"chat.completion","choices":[{"message":{"content":"a\u00e9\ud83d\ude00\n"}}],"usage":{"prompt_tokens":7,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":null},"completion_tokens_details":null}}`,
		`{"usage":{"input_to\u212aens":5,"output_tokens":1}}`, `{"usage":{"input_tokens":3},"usage":{"output_tokens":4}}`,
		`{"usage":{"input_tokens":9223372036854775807,"output_tokens":-9223372036854775808}}`,
		"{\"content\":\"\xff\xfe\",\"\xffusage\":1,\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}",
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := fastUsage(bytes.Clone(b))
		if !ok {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("fast path read the usage of an answer encoding/json refuses: %q", b)
		}
		if std := stdUsage(b); !reflect.DeepEqual(fast, std) {
			t.Fatalf("answer %q:\nfast %s\n std %s", b, dumpUsage(fast), dumpUsage(std))
		}
	})
}

// K1: a stream's metered usage, and in strip mode the bytes passed to the agent, do not
// depend on how the stream is cut into reads: the whole stream in one read and the same bytes
// cut where the fuzzer says give the same counts and the same output.
func FuzzStreamMeterSplit(f *testing.F) {
	anth := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hi\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":5}}\n\n"
	chat := "data: {\"choices\":[{\"delta\":{\"content\":\"hel\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"
	resp := "event: response.completed\r\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":5,\n" +
		"data: \"output_tokens\":2}}}\r\n\r\n"
	for i, s := range []string{anth, chat, resp, chat[:40], anth + "data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}"} {
		f.Add(uint8(i), []byte(s), []byte{3, 17, 1, 200, 40})
	}
	apis := []API{AnthropicMessages, OpenAIChat, OpenAIResponses, OpenAIChat}
	f.Fuzz(func(t *testing.T, which uint8, stream, cuts []byte) {
		api := apis[int(which)%len(apis)]
		strip := int(which)%len(apis) == 3
		one, out1 := meterStream(api, strip, [][]byte{stream})
		var parts [][]byte
		rest := stream
		for _, c := range cuts {
			if len(rest) == 0 {
				break
			}
			n := min(int(c)%(len(rest)+1), len(rest))
			parts, rest = append(parts, rest[:n]), rest[n:]
		}
		parts = append(parts, rest)
		split, out2 := meterStream(api, strip, parts)
		if one != split {
			t.Fatalf("stream %q (%s) cut %v: one read %+v, cut %+v", stream, api, cuts, one, split)
		}
		if strip && !bytes.Equal(out1, out2) {
			t.Fatalf("stream %q cut %v: agent gets %q in one read, %q cut", stream, cuts, out1, out2)
		}
	})
}

type meterResult struct {
	in, out, cacheW, cacheR, reasoning int64
	haveIn, final                      bool
}

// meterStream feeds parts through a usage reader as the proxy does and returns what it
// metered, and in strip mode what the agent would read.
func meterStream(api API, strip bool, parts [][]byte) (meterResult, []byte) {
	st := &usageState{}
	r := &usageReader{api: api, st: st, sse: true, strip: strip}
	var out []byte
	for _, p := range parts {
		// The proxy reads into a buffer it reuses: a reader that kept a slice of it would
		// see it change.
		buf := bytes.Clone(p)
		r.feed(buf)
		for i := range buf {
			buf[i] = 'X'
		}
		out = append(out, r.out...)
		r.out = r.out[:0]
	}
	r.end()
	out = append(out, r.out...)
	tk := st.tokens
	return meterResult{tk.Input, tk.Output, tk.CacheWrite, tk.CacheRead, tk.Reasoning, st.haveIn, st.final}, out
}

// E8: the tree codec against encoding/json: the fast decoder accepts only what encoding/json
// accepts and builds the same tree; the encoder writes what encoding/json writes, and what it
// writes decodes back to the same tree (and re-encodes to the same bytes).
func FuzzTreeCodec(f *testing.F) {
	for _, b := range []string{
		`{"model":"claude-opus-5-5","max_tokens":128000,"messages":[{"role":"user","content":"hi"}]}`,
		` {"a" : [ 1 , -0.5e+3 , 0 , -0 , 1E9 , true , false , null , {} , [] , "" ] } `,
		`{"s":"\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00\ud800\udc00x\ud800\u0041\udc00\ud800","t":"日本 é"}`,
		`{"dup":1,"dup":{"x":2},"dup":"last"}`, `{"bad":"` + "\xff\xfe\xed\xa0\x80\xc3(" + `"}`,
		`{"a":"<tag>&amp;\u2028\u2029\u0000\u001f\u007f"}`, `{"n":01}`, `{"a":1}x`, "\xef\xbb\xbf{}",
		`{"n":123456789012345678901234567890,"f":1.000000000000000000001,"neg":-12.5e+7}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		std, ref := decodeObjectStd(b)
		fast, ok := fastDecode(bytes.Clone(b))
		if ok && ref != nil {
			t.Fatalf("fast decoder accepted what encoding/json refuses (%v): %q", ref, b)
		}
		if ok && !reflect.DeepEqual(fast, std) {
			t.Fatalf("body %q:\nfast %#v\n std %#v", b, fast, std)
		}
		o, r := decodeObject(b)
		if (r == nil) != (ref == nil) {
			t.Fatalf("decodeObject(%q) refusal %v, encoding/json %v", b, r, ref)
		}
		if r != nil {
			return
		}
		enc, err := encodeObject(o, len(b))
		if err != nil {
			t.Fatalf("encodeObject(decode(%q)): %v", b, err)
		}
		if want := referenceEncode(t, o); !bytes.Equal(enc, want) {
			t.Fatalf("body %q:\n encoded %s\nencoding/json %s", b, enc, want)
		}
		back, r := decodeObject(enc)
		if r != nil {
			t.Fatalf("decode(encode(decode(%q))) refused: %v: %s", b, r, enc)
		}
		again, _ := encodeObject(back, 0)
		if !bytes.Equal(again, enc) {
			t.Fatalf("encode(decode(x)) is not stable for %q:\n %s\n %s", b, enc, again)
		}
		// The decoder makes every string valid UTF-8, so the encoder has nothing to replace
		// and the tree comes back whole.
		if !reflect.DeepEqual(back, o) {
			t.Fatalf("decode(encode(t)) != t for %q: %s", b, enc)
		}
	})
}
