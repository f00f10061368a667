package metering

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
)

// K1: the usage read from a JSON answer in one pass is the usage encoding/json reads; where
// the fast path is not sure, it steps aside. Over answers of the three APIs (text that quotes
// a "usage" key included) and mutations of them.
func TestFastUsageAgreesWithEncodingJSON(t *testing.T) {
	corpus := []string{
		`{"id":"msg_1","type":"message","content":[{"type":"text","text":"hi \"usage\":{\"input_tokens\":0}"},{"type":"tool_use","input":{"usage":{"input_tokens":0}}}],"usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":40000}}`,
		`{"id":"resp_1","object":"response","usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1000},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":200},"total_tokens":1500}}`,
		`{"id":"c1","object":"chat.completion","choices":[{"message":{"content":"a\u00e9\ud83d\ude00\n"}}],"usage":{"prompt_tokens":7,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":null},"completion_tokens_details":null}}`,
		`{"usage":{"input_tokens":-1,"output_tokens":1e3}}`, `{"usage":{"input_tokens":1.5}}`,
		`{"usage":{"Input_Tokens":3,"output_tokens":4}}`, `{"Usage":{"input_tokens":3},"usage":{"input_tokens":4}}`,
		`{"usage":{"input_tokens":"3"}}`, `{"usage":null}`, `{"usage":[]}`, `{"usage":{}}`, `{}`, `[]`,
		`{"usage":{"input_tokens":99999999999999999999}}`, `{"usage":{"input_tokens_details":{"CACHED_TOKENS":1}}}`,
		`{"usage":{"input_tokens_details":[1]}}`, `{"usage":{"input_tokens":3},"us\u0061ge":{"output_tokens":4}}`,
		`{"usage":{"input_tokens":3},"usage":{"output_tokens":4}}`, `{"usage":{"input_tokens":3,"input_tokens":null}}`,
		`{"usage":{"input_tokens_details":{"cached_tokens":1},"input_tokens_details":{"reasoning_tokens":2}}}`,
		`{"a":[1,{"b":"\x"}],"usage":{"input_tokens":1}}`,
		`{"id":"msg_1","service_tier":"standard","usage":{"input_tokens":2,"service_tier":"standard","cache_creation":{"ephemeral_5m_input_tokens":1},"output_tokens":3}}`, `{"a":01,"usage":{"input_tokens":1}}`, "{\"a\":\"\x01\",\"usage\":{}}",
		// Hostile answers: a key twice deep in a field the usage does not read, names escaped,
		// folded by Unicode (the Kelvin sign and the long s fold to k and s) or not UTF-8,
		// counts at and past int64, deep nesting.
		`{"usage":{"input_tokens":3,"cache_creation":{"a":1,"a":{"b":2,"b":3}},"output_tokens":4}}`,
		`{"usage":{"input\u005ftokens":5,"output_tokens":1}}`, `{"usage":{"input_tokens":5,"input\u005ftokens":6}}`,
		`{"usage":{"input_to\u212aens":5,"output_tokens":1}}`, "{\"usage\":{\"input_to\xe2\x84\xaaens\":5}}",
		`{"u\u017fage":{"input_tokens":5},"usage":{"output_tokens":1}}`, "{\"u\xc5\xbfage\":{\"input_tokens\":5}}",
		"{\"content\":\"\xff\xfe\",\"\xffusage\":1,\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}",
		"{\"usage\":{\"input_tokens\":1,\"\xff\":2,\"output_tokens_details\":{\"reasoning_tokens\":3,\"\xfe\":4}}}",
		`{"usage":{"input_tokens":9223372036854775807,"output_tokens":-9223372036854775808}}`,
		`{"usage":{"input_tokens":9223372036854775808}}`, `{"usage":{"input_tokens":-0,"output_tokens":0}}`,
		`{"usage":{"input_tokens_details":null,"input_tokens_details":{"cached_tokens":1}}}`,
		`{"content":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `,"usage":{"input_tokens":1}}`,
		`{"usage":{"input_tokens":1,"x":` + strings.Repeat(`{"a":`, 1100) + `1` + strings.Repeat("}", 1100) + `}}`,
		`{"usage":{"input_tokens":1,"x":` + strings.Repeat(`[`, 900) + strings.Repeat("]", 900) + `}}`,
	}
	check := func(b string) {
		t.Helper()
		buf := []byte(b)
		fast, ok := fastUsage(buf)
		if !ok {
			return
		}
		// Nothing read holds on to the answer's buffer, which the proxy reuses.
		for i := range buf {
			buf[i] = 'X'
		}
		if std := stdUsage([]byte(b)); !reflect.DeepEqual(fast, std) {
			t.Fatalf("answer %q:\nfast %s\n std %s", b, dumpUsage(fast), dumpUsage(std))
		}
		if _, err := json.Marshal(json.RawMessage(b)); err != nil {
			t.Fatalf("fast path read the usage of an answer encoding/json refuses: %q", b)
		}
	}
	for _, b := range corpus {
		check(b)
	}
	for _, b := range corpus[:3] {
		if w, ok := fastUsage([]byte(b)); !ok || w == nil {
			t.Errorf("fast path refused a plain answer, so it is not the fast path: %q", b)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	const alphabet = "{}[],:\"\\ 0123456789-.eEnulIUT_tf\x01"
	for range 30000 {
		check(testkit.Mutate(r, corpus[r.IntN(len(corpus))], alphabet))
	}
}

func dumpUsage(w *wireUsage) string {
	if w == nil {
		return "<nil>"
	}
	b, _ := json.Marshal(w)
	return string(b)
}
