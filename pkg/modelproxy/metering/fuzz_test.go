//go:build anettest

package metering

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"anet.dev/anet/pkg/modelproxy/rules"
)

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
	apis := []rules.API{rules.AnthropicMessages, rules.OpenAIChat, rules.OpenAIResponses, rules.OpenAIChat}
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
func meterStream(api rules.API, strip bool, parts [][]byte) (meterResult, []byte) {
	st := &Answer{}
	r := &Reader{api: api, st: st, sse: true, strip: strip}
	var out []byte
	for _, p := range parts {
		// The proxy reads into a buffer it reuses: a reader that kept a slice of it would
		// see it change.
		buf := bytes.Clone(p)
		r.Feed(buf)
		for i := range buf {
			buf[i] = 'X'
		}
		out = append(out, r.out...)
		r.out = r.out[:0]
	}
	r.End()
	out = append(out, r.out...)
	tk := st.tokens
	return meterResult{tk.Input, tk.Output, tk.CacheWrite, tk.CacheRead, tk.Reasoning, st.haveIn, st.final}, out
}
