package rules

import (
	"fmt"
	"strings"
	"testing"

	"anet.dev/anet/pkg/modelproxy/jsontree"
	"anet.dev/anet/pkg/reasons"
)

// lengthSite is one place a request carries an output length the cap covers (E3): the API,
// the body with the length's value spliced in at %s, and the field's path as a refusal names it.
type lengthSite struct {
	name string
	eng  *Engine
	api  API
	body string // one %s: the value
	path string
	// capAt is where a null leaves the cap (chat sets the field its provider reads), or ""
	// where a missing field stays missing and the null is dropped (compact has no length field
	// of its own).
	capAt string
}

// lengthSites is every API × every length field the engine reads.
func lengthSites(t *testing.T) []lengthSite {
	claude := mustEngine(t, "claude", "", "")
	codex := mustEngine(t, "codex", "", "")
	custom := mustEngine(t, "opencode", "https://llm.example.com/v1", "m-1")
	return []lengthSite{
		{"messages max_tokens", claude, AnthropicMessages, `{` + userMsg + `,"max_tokens":%s}`, "max_tokens", "max_tokens"},
		{"messages fallbacks[0].max_tokens", claude, AnthropicMessages, `{` + userMsg + `,"max_tokens":100,"fallbacks":[{"model":"x","max_tokens":%s}]}`, "fallbacks[0].max_tokens", "fallbacks[0].max_tokens"},
		{"messages tools[0].max_tokens", claude, AnthropicMessages, `{` + userMsg + `,"max_tokens":100,"tools":[{"name":"advisor","input_schema":{"type":"object"},"model":"x","max_tokens":%s}]}`, "tools[0].max_tokens", "tools[0].max_tokens"},
		{"custom messages max_tokens", custom, AnthropicMessages, `{` + userMsg + `,"max_tokens":%s}`, "max_tokens", "max_tokens"},
		{"chat max_tokens", codex, OpenAIChat, `{` + chatMsgs + `,"max_tokens":%s}`, "max_tokens", "max_completion_tokens"},
		{"chat max_completion_tokens", codex, OpenAIChat, `{` + chatMsgs + `,"max_completion_tokens":%s}`, "max_completion_tokens", "max_completion_tokens"},
		{"chat both", codex, OpenAIChat, `{` + chatMsgs + `,"max_tokens":%[1]s,"max_completion_tokens":%[1]s}`, "max_completion_tokens", "max_completion_tokens"},
		{"custom chat max_tokens", custom, OpenAIChat, `{` + chatMsgs + `,"max_tokens":%s}`, "max_tokens", "max_tokens"},
		{"custom chat max_completion_tokens", custom, OpenAIChat, `{` + chatMsgs + `,"max_completion_tokens":%s}`, "max_completion_tokens", "max_tokens"},
		{"responses max_output_tokens", codex, OpenAIResponses, `{` + respInput + `,"max_output_tokens":%s}`, "max_output_tokens", "max_output_tokens"},
		{"compact max_output_tokens", codex, OpenAICompact, `{` + respInput + `,"max_output_tokens":%s}`, "max_output_tokens", ""},
	}
}

// E3, K2: a null length is missing, on every API and every field the cap covers: the
// upstreams read null as "not set" and use the model's own maximum, while the run's
// reservation counts the cap. It is never forwarded; the cap is set in its place (or, where a
// missing field stays missing, it is dropped). Every other value that is not a positive
// integer is refused with field_invalid and a message naming the field, as a mistyped length
// always was: guessing what "100" or 1e3 meant could bill more than was reserved.
func TestBadLengthFieldsE3K2(t *testing.T) {
	bad := []string{`""`, `"100"`, `"8192"`, `true`, `false`, `100.5`, `1e3`, `1.0`, `{}`, `{"n":1}`, `[]`, `[100]`, `-1`, `0`, `-0`, `99999999999999999999`}
	for _, s := range lengthSites(t) {
		t.Run(s.name+"/null", func(t *testing.T) {
			body := fmt.Sprintf(s.body, "null")
			d := s.eng.Apply(s.api, hdr(), []byte(body))
			if d.Refusal != nil {
				t.Fatalf("Apply(%s) = refusal %s, want forwarded with the cap", body, d.Refusal.Message())
			}
			o := decodeForTest(t, d.Body)
			checkLengths(t, s.eng, s.api, o, d.MaxOutput)
			if s.capAt == "" {
				wantAbsent(t, o, lengthPath(s.path)...)
			} else {
				wantField(t, o, fmt.Sprint(s.eng.cap), lengthPath(s.capAt)...)
			}
			if strings.Contains(string(d.Body), "null") {
				t.Fatalf("Apply(%s) forwarded a null: %s", body, d.Body)
			}
		})
		for _, v := range bad {
			t.Run(s.name+"/"+v, func(t *testing.T) {
				body := fmt.Sprintf(s.body, v)
				d := s.eng.Apply(s.api, hdr(), []byte(body))
				if d.Refusal == nil {
					t.Fatalf("Apply(%s) forwarded %s, want refusal %s", body, d.Body, FieldInvalid)
				}
				if d.Refusal.Code != FieldInvalid || !strings.Contains(d.Refusal.Detail, s.path) {
					t.Fatalf("Apply(%s) = %s (%s), want %s naming %s", body, d.Refusal.Code, d.Refusal.Detail, FieldInvalid, s.path)
				}
				if want := "anet: " + reasons.Text(FieldInvalid); !strings.HasPrefix(d.Refusal.Message(), want) {
					t.Fatalf("Apply(%s) message = %q, want prefix %q", body, d.Refusal.Message(), want)
				}
			})
		}
	}
	// count_tokens generates nothing: a length there is not allowed at all, null included.
	e := mustEngine(t, "claude", "", "")
	for _, v := range append([]string{"null", "100"}, bad...) {
		body := `{` + userMsg + `,"max_tokens":` + v + `}`
		if d := e.Apply(AnthropicCountTokens, hdr(), []byte(body)); d.Refusal == nil || d.Refusal.Code != FieldNotAllowed {
			t.Errorf("Apply(count_tokens, %s) = %v, want %s", body, d.Refusal, FieldNotAllowed)
		}
	}
}

// E3: chat with one length null and the other set keeps the set one, capped, and no null.
func TestChatOneLengthNullE3(t *testing.T) {
	e := mustEngine(t, "codex", "", "")
	for _, c := range []struct{ body, field, want string }{
		{`{` + chatMsgs + `,"max_tokens":null,"max_completion_tokens":100}`, "max_completion_tokens", "100"},
		{`{` + chatMsgs + `,"max_tokens":50000,"max_completion_tokens":null}`, "max_tokens", "8192"},
	} {
		d := e.Apply(OpenAIChat, hdr(), []byte(c.body))
		if d.Refusal != nil || strings.Contains(string(d.Body), "null") {
			t.Fatalf("Apply(%s) = %s %v, want forwarded without a null", c.body, d.Body, d.Refusal)
		}
		o := decodeForTest(t, d.Body)
		wantField(t, o, c.want, c.field)
		if d.MaxOutput != mustInt(t, c.want) {
			t.Fatalf("Apply(%s).MaxOutput = %d, want %s", c.body, d.MaxOutput, c.want)
		}
	}
}

// K2: the worst case reserved for a request covers every length it may bill: the answer's
// (the largest of the request and its fallbacks, one of which answers) plus that of each tool
// that names its own model, which writes beside the answer.
func TestReservationCountsToolLengthsK2(t *testing.T) {
	e := mustEngine(t, "claude", "", "")
	tool := func(name, mt string) string {
		return `{"name":"` + name + `","input_schema":{"type":"object"},"model":"x"` + mt + `}`
	}
	for _, c := range []struct {
		name, body string
		want       int64
	}{
		{"no tool model", `{` + userMsg + `,"max_tokens":100,"tools":[{"name":"f","input_schema":{"type":"object"},"max_tokens":5000}]}`, 100},
		{"one tool", `{` + userMsg + `,"max_tokens":100,"tools":[` + tool("a", `,"max_tokens":5000`) + `]}`, 5100},
		{"tool capped", `{` + userMsg + `,"max_tokens":100,"tools":[` + tool("a", `,"max_tokens":50000`) + `]}`, 100 + 8192},
		{"tool without a length gets the cap", `{` + userMsg + `,"max_tokens":100,"tools":[` + tool("a", ``) + `]}`, 100 + 8192},
		{"two tools and a fallback", `{` + userMsg + `,"max_tokens":100,"fallbacks":[{"model":"y","max_tokens":300}],"tools":[` + tool("a", `,"max_tokens":7`) + `,` + tool("b", `,"max_tokens":11`) + `]}`, 300 + 7 + 11},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := e.Apply(AnthropicMessages, hdr(), []byte(c.body))
			if d.Refusal != nil {
				t.Fatalf("Apply = refusal %s", d.Refusal.Message())
			}
			if d.MaxOutput != c.want {
				t.Fatalf("Apply(%s).MaxOutput = %d, want %d", c.body, d.MaxOutput, c.want)
			}
			checkLengths(t, e, AnthropicMessages, decodeForTest(t, d.Body), d.MaxOutput)
		})
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("mustInt(%q): %v", s, err)
	}
	return n
}

// lengthPath turns "fallbacks[0].max_tokens" into the keys at walks.
func lengthPath(p string) []any {
	var out []any
	for part := range strings.SplitSeq(p, ".") {
		if i := strings.IndexByte(part, '['); i >= 0 {
			var n int
			fmt.Sscanf(part[i:], "[%d]", &n)
			out = append(out, part[:i], n)
			continue
		}
		out = append(out, part)
	}
	return out
}

// checkLengths holds a forwarded body o of api to the cap (E3) and its bound to every length
// in it (K2); it reports the first rule broken. Shared by the tables and the fuzz target.
func checkLengths(t testing.TB, e *Engine, api API, o map[string]any, maxOut int64) {
	t.Helper()
	if err := lengthRules(e, api, o, maxOut); err != nil {
		t.Fatalf("%v: %s", err, mustEncode(o))
	}
}

func mustEncode(o map[string]any) string {
	b, err := jsontree.Encode(o, 0)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// lengthRules is checkLengths as an error: every length field of the request, its fallbacks
// and its model-naming tools is an integer in [1, cap]; the field the API needs is there; the
// bound is at least the answer's length plus each tool's.
func lengthRules(e *Engine, api API, o map[string]any, maxOut int64) error {
	field := func(obj map[string]any, where string) (int64, error) {
		var most int64
		for _, k := range outputTokenFields {
			v, ok := obj[k]
			if !ok {
				continue
			}
			n, isInt := jsontree.Int(v)
			if !isInt || n < 1 || n > e.cap {
				return 0, fmt.Errorf("%s%s = %v, want an integer in [1, %d]", where, k, v, e.cap)
			}
			most = max(most, n)
		}
		return most, nil
	}
	answer, err := field(o, "")
	if err != nil {
		return err
	}
	switch api {
	case AnthropicMessages:
		if _, ok := o["max_tokens"]; !ok {
			return fmt.Errorf("max_tokens missing")
		}
	case OpenAIResponses:
		if _, ok := o["max_output_tokens"]; !ok {
			return fmt.Errorf("max_output_tokens missing")
		}
	case OpenAIChat:
		_, a := o["max_tokens"]
		_, b := o["max_completion_tokens"]
		if !a && !b {
			return fmt.Errorf("max_tokens and max_completion_tokens missing")
		}
	case AnthropicCountTokens:
		if answer != 0 || maxOut != 0 {
			return fmt.Errorf("count_tokens with a length %d, bound %d", answer, maxOut)
		}
		return nil
	}
	if answer == 0 {
		answer = e.cap
	}
	if fb, ok := o["fallbacks"].([]any); ok {
		for i, f := range fb {
			fo, _ := f.(map[string]any)
			n, err := field(fo, fmt.Sprintf("fallbacks[%d].", i))
			if err != nil {
				return err
			}
			if _, ok := fo["max_tokens"]; !ok {
				return fmt.Errorf("fallbacks[%d].max_tokens missing", i)
			}
			answer = max(answer, n)
		}
	}
	need := answer
	if tools, ok := o["tools"].([]any); ok && api == AnthropicMessages {
		for i, tl := range tools {
			to, _ := tl.(map[string]any)
			if _, named := to["model"]; !named {
				continue
			}
			n, err := field(to, fmt.Sprintf("tools[%d].", i))
			if err != nil {
				return err
			}
			if _, ok := to["max_tokens"]; !ok {
				return fmt.Errorf("tools[%d].max_tokens missing", i)
			}
			need += n
		}
	}
	if maxOut < need {
		return fmt.Errorf("bound %d < %d, the lengths the request may bill", maxOut, need)
	}
	return nil
}
