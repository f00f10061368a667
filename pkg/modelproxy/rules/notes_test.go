package rules

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"unicode/utf8"

	"anet.dev/anet/pkg/modelproxy/jsontree"
	"anet.dev/anet/pkg/reasons"
)

// E2, E3: the notes of the request's log line say what was pinned and capped, in the words
// fmt's %q and %d give them, whatever the agent sent as its model: quotes, backslashes,
// control characters, non-ASCII and invalid UTF-8 included.
func TestNotesPinnedAndCappedE2E3(t *testing.T) {
	e := mustEngine(t, "claude", "", "")
	h := http.Header{"Anthropic-Version": {"2023-06-01"}}
	for _, model := range []string{"claude-opus-5-5", `a"b`, `a\b`, "tab\there", "del\x7f", "é", "\xff", "",
		"a-name-longer-than-sixty-characters-that-the-note-clips-to-its-first-sixty-and-then-some"} {
		for _, max := range []int64{8193, 128000, 99999999} {
			body, _ := jsontree.Encode(object{"model": model, "max_tokens": json64(max), "messages": []any{}}, 0)
			d := e.Apply(AnthropicMessages, h, body)
			if d.Refusal != nil {
				t.Fatalf("model %q: %v", model, d.Refusal)
			}
			// The body holds the model as encoding/json writes it (invalid UTF-8 as U+FFFD):
			// what the rules read is its decoding.
			read := model
			if !utf8.ValidString(read) {
				read = "\uFFFD"
			}
			want := []string{
				fmt.Sprintf("model %q→%q", reasons.Clip(read, 60), e.Model()),
				fmt.Sprintf("max_tokens capped %d→%d", max, e.cap),
			}
			if read == e.Model() {
				want = want[1:]
			}
			if !slices.Equal(d.Notes, want) {
				t.Errorf("model %q, max_tokens %d: notes %q, want %q", model, max, d.Notes, want)
			}
		}
	}
	d := e.Apply(AnthropicMessages, h, []byte(`{"model":"`+e.Model()+`","messages":[]}`))
	if want := []string{fmt.Sprintf("max_tokens set to %d", e.cap)}; !slices.Equal(d.Notes, want) {
		t.Errorf("max_tokens missing: notes %q, want %q", d.Notes, want)
	}
}

func TestQuoteIsStrconvQuote(t *testing.T) {
	for c := range 256 {
		for _, s := range []string{string(rune(c)), string([]byte{byte(c)}), "a" + string([]byte{byte(c)}) + "z"} {
			if got, want := quote(s), strconv.Quote(s); got != want {
				t.Errorf("quote(%q) = %s, want %s", s, got, want)
			}
		}
	}
}

func json64(n int64) any { return json.Number(strconv.FormatInt(n, 10)) }
