//go:build anettest

package modelproxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
)

// escapedKey is the key of an operator's own service: base64's '/', '+' and '=', and an '&',
// which JSON encoders spell in more than one way.
func escapedKey(t *testing.T) string { return "sk-op/" + randHex(t, 16) + "+&=/z" }

// spellings are the ways the tests' upstreams quote a secret, worked out here apart from
// secretForms: as it is, as Go's encoding/json writes it (\u0026), as PHP's json_encode does
// (\/), Go's escaped again inside a string (a gateway's wrapped error), and percent-encoded.
func spellings(t *testing.T, s string) map[string]string {
	goJSON := func(s string) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[1 : len(b)-1])
	}
	return map[string]string{
		"raw":          s,
		"go json":      goJSON(s),
		"php json":     strings.ReplaceAll(s, "/", `\/`),
		"wrapped json": goJSON(goJSON(s)),
		"query":        url.QueryEscape(s),
	}
}

// agentSeesNo fails if what the agent got holds the secret in any spelling, or, read as JSON
// (each event's data in a stream, and a string in it that is JSON itself, decoded again), holds
// it once decoded; and unless it carries marker.
func agentSeesNo(t *testing.T, what, got, secret, marker string) {
	t.Helper()
	for name, sp := range spellings(t, secret) {
		if strings.Contains(got, sp) {
			t.Fatalf("%s: the agent has the secret (%s spelling %q):\n%s", what, name, sp, got)
		}
	}
	docs := []string{got}
	if strings.Contains(got, "data:") {
		docs = nil
		sc := bufio.NewScanner(strings.NewReader(got))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				docs = append(docs, strings.TrimSpace(d))
			}
		}
	}
	for _, d := range docs {
		var v any
		if json.Unmarshal([]byte(d), &v) != nil {
			continue // the text search above is what judges a body that is not JSON
		}
		for _, s := range jsonStrings(v, 2) {
			if strings.Contains(s, secret) {
				t.Fatalf("%s: the agent's JSON decodes to the secret: %q", what, s)
			}
		}
	}
	if !strings.Contains(got, marker) {
		t.Fatalf("%s: the agent's answer carries no marker %q:\n%s", what, marker, got)
	}
}

// jsonStrings returns every string in v, and those in any string that is JSON itself, to depth.
func jsonStrings(v any, depth int) []string {
	var out []string
	switch x := v.(type) {
	case string:
		out = append(out, x)
		var inner any
		if depth > 0 && json.Unmarshal([]byte(x), &inner) == nil {
			out = append(out, jsonStrings(inner, depth-1)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, jsonStrings(e, depth)...)
		}
	case map[string]any:
		for k, e := range x {
			out = append(out, k)
			out = append(out, jsonStrings(e, depth)...)
		}
	}
	return out
}

// E1: an operator's own service that quotes the key it was sent — in a 401 as PHP spells it
// and in a header percent-encoded, in a 400 as Go's encoder spells it and wrapped by a gateway
// into a string of its own — reaches the agent with no spelling of the key, a marker in its
// place, the same length as the upstream's and a right Content-Length.
func TestUpstreamQuotesKeyInErrorsE1(t *testing.T) {
	key := escapedKey(t)
	h := newHarnessKey(t, key, "claude", "", Limits{})
	sp := spellings(t, key)
	goBody := func(msg string) string {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": msg}})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		status int
		body   func(key string) string
		header http.Header
	}{
		{"401 as PHP writes it", 401, func(k string) string {
			return `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: ` + strings.ReplaceAll(k, "/", `\/`) + ` (raw: ` + k + `)"}}`
		}, http.Header{"Www-Authenticate": {`Bearer error="invalid_token", key="` + url.QueryEscape(key) + `"`}}},
		{"400 as Go writes it", 400, func(k string) string { return goBody("max_tokens too large for key " + k) }, nil},
		{"400 wrapped by a gateway", 400, func(k string) string { return goBody("upstream said: " + goBody("bad key "+k)) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.up.SetAnswer(func(w http.ResponseWriter, r *http.Request) {
				b := tc.body(r.Header.Get("X-Api-Key"))
				for k, v := range tc.header {
					w.Header()[k] = v
				}
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", strconv.Itoa(len(b)))
				w.WriteHeader(tc.status)
				io.WriteString(w, b)
			})
			resp, got := h.do("POST", "/v1/messages", nil, `{"messages":[{"role":"user","content":"x"}]}`)
			if resp.StatusCode != tc.status || len(got) != len(tc.body(key)) || resp.ContentLength != int64(len(got)) {
				t.Fatalf("status %d, %d bytes, Content-Length %d; want %d, %d bytes", resp.StatusCode, len(got), resp.ContentLength, tc.status, len(tc.body(key)))
			}
			agentSeesNo(t, "body", string(got), key, markerText)
			if tc.header != nil {
				var hs strings.Builder
				resp.Header.Write(&hs)
				for name, s := range sp {
					if strings.Contains(strings.ToLower(hs.String()), strings.ToLower(s)) {
						t.Fatalf("the key reached the agent in a header (%s spelling):\n%s", name, hs.String())
					}
				}
				if !strings.Contains(resp.Header.Get("Www-Authenticate"), markerText) {
					t.Fatalf("WWW-Authenticate %q carries no marker", resp.Header.Get("Www-Authenticate"))
				}
			}
		})
	}
	if strings.Contains(h.logs.String(), key) || strings.Count(h.logs.String(), "echoed the operator's key") != 1 {
		t.Fatalf("log: want one line about the echo, without the key:\n%s", h.logs.String())
	}
	if n := h.proxy.Usage().Upstream.KeyEchoes; n != 3 {
		t.Fatalf("key echoes %d, want 3", n)
	}
}

// E1: a stream that quotes the key mid-answer as PHP spells it, cut inside the escape and
// across three flushes, reaches the agent redacted; the bytes before the key reach it at once.
func TestUpstreamQuotesKeyMidStreamE1(t *testing.T) {
	key := escapedKey(t)
	h := newHarnessKey(t, key, "claude", "", Limits{})
	pieces := streamingUpstream(t, h)
	s := h.stream(t)
	php := strings.ReplaceAll(key, "/", `\/`)
	ev := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"your key is "
	send(t, pieces, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
	send(t, pieces, ev+php[:3]) // "sk-", then "o" and the escape's backslash
	want := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" + ev
	s.has(t, "the events before the key", want)
	send(t, pieces, php[3:6])
	send(t, pieces, php[6:]+"\"}}\n\n")
	send(t, pieces, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n")
	close(pieces)
	testkit.WaitFor(t, "the stream to end", func() bool { _, done := s.snapshot(); return done })
	got, _ := s.snapshot()
	agentSeesNo(t, "stream", got, key, markerText)
	if !strings.HasPrefix(got, want) || len(got) != len(want)+len(php)+len("\"}}\n\n")+len("event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n") {
		t.Fatalf("the agent's stream is %q", got)
	}
	h.proxy.meter.AnetTestSettled()
	if u := h.proxy.Usage(); u.Spend.Tokens.Output != 9 || u.Upstream.KeyEchoes != 1 {
		t.Fatalf("metered %+v, key echoes %d; want 9 out, 1 echo", u.Spend.Tokens, u.Upstream.KeyEchoes)
	}
}

// E1: the run's placeholder in an answer (the upstream never receives it, E7, so the answer
// quotes what the agent sent) is redacted with a marker of its own, and logged once without it.
func TestUpstreamQuotesPlaceholderE1(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	body := `{"type":"message","content":[{"type":"text","text":"the token ` + h.ph + ` again: ` + h.ph + `"}],"usage":{"input_tokens":7,"output_tokens":5}}`
	h.up.SetAnswer(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", "token="+h.ph)
		w.WriteHeader(200)
		io.WriteString(w, body)
	})
	resp, got, spend := h.sent("/v1/messages", `{"messages":[{"role":"user","content":"x"}]}`, nil)
	agentSeesNo(t, "body", got, h.ph, tokenMarkerText)
	if len(got) != len(body) || !json.Valid([]byte(got)) || spend.Tokens.Output != 5 {
		t.Fatalf("answer %q (%d bytes, want %d), metered %+v", got, len(got), len(body), spend.Tokens)
	}
	if v := resp.Header.Get("X-Echo"); strings.Contains(v, h.ph) || !strings.Contains(v, tokenMarkerText) {
		t.Fatalf("X-Echo %q", v)
	}
	logs := h.logs.String()
	if strings.Contains(logs, h.ph) || strings.Count(logs, "held the run's placeholder") != 1 {
		t.Fatalf("log: want one line about the token, without it:\n%s", logs)
	}
	if n := h.proxy.Usage().Upstream.KeyEchoes; n != 0 {
		t.Fatalf("key echoes %d for an answer without the key", n)
	}
}

// E1: a key of letters, digits, '-' and '_' has one spelling (the scan costs what it did);
// others have each spelling an encoder gives them, the key itself first and none twice.
func TestSecretFormsE1(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want []string // among the forms
		n    int      // how many, 0: not checked
	}{
		{"sk-ant-api03-AbC_d-9xyz", []string{"sk-ant-api03-AbC_d-9xyz"}, 1},
		{"0123456789abcdef", []string{"0123456789abcdef"}, 1},
		{"a/b", []string{"a/b", `a\/b`, `a\\/b`, "a%2Fb"}, 0},
		{"a+b=", []string{"a+b=", "a%2Bb%3D"}, 0},
		{"k&<", []string{"k&<", `k\u0026\u003c`, `k\u0026\u003C`, `k\\u0026\\u003c`, "k%26%3C"}, 0},
		{`q"\`, []string{`q"\`, `q\"\\`, `q\\\"\\\\`}, 0},
		{"é😀", []string{"é😀", `\u00e9\ud83d\ude00`, `\u00E9\uD83D\uDE00`}, 0},
	} {
		t.Run(tc.key, func(t *testing.T) {
			forms := secretForms(tc.key)
			if forms[0] != tc.key {
				t.Fatalf("secretForms(%q)[0] = %q, want the key", tc.key, forms[0])
			}
			seen := map[string]bool{}
			for _, f := range forms {
				if seen[f] {
					t.Fatalf("secretForms(%q) has %q twice", tc.key, f)
				}
				seen[f] = true
			}
			for _, w := range tc.want {
				if !seen[w] {
					t.Fatalf("secretForms(%q) = %q, want %q among them", tc.key, forms, w)
				}
			}
			if tc.n != 0 && len(forms) != tc.n {
				t.Fatalf("secretForms(%q) = %q, want %d forms", tc.key, forms, tc.n)
			}
		})
	}
}
