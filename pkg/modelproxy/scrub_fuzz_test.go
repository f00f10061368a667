//go:build anettest

package modelproxy

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// FuzzKeyScrub (E1): for any key, placeholder, answer and cutting of the answer into writes,
// what the agent gets through the proxy's writer
//   - holds neither secret as it is, nor as Go's encoding/json, PHP's json_encode or a URL's
//     query spells it (worked out here, apart from secretForms);
//   - has the answer's length (a Content-Length stays right);
//   - is the same however the answer is cut: what redacting it whole gives;
//   - is the answer itself, byte for byte, when the answer holds no spelling of either secret.
//
// The header path (replaceFold, ASCII case ignored) is held to the same, read without case.
func FuzzKeyScrub(f *testing.F) {
	ph := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, key := range []string{"x", "xa", "aa", "*a*", "anet-redacted-key", "*anet-redacted-key", "sk-ant-a", "ab*#~!ab", "sk-operator-0123456789abcdef0123456789abcdef", "sk-op/abc+&=/z"} {
		f.Add(key, ph, []byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: `+key+`"}}`), []byte{7, 3})
		f.Add(key, "", []byte("event: content_block_delta\ndata: {\"text\":\""+key+"\"}\n\n"+key[:len(key)/2]), []byte{1, 1, 1, 200})
	}
	long := "sk-ant-api03-" + strings.Repeat("Zq7_", 23) + "abc"
	f.Add(long, ph, []byte(long[:40]+" "+long[:31]+long+long[:107]+"x"+long), []byte{30, 31, 80})
	f.Add("a/b", "ab", []byte(`a\/b a\\/b a%2Fb ab a/`), []byte{2, 5})
	f.Add("ab", "abcd", []byte("xxabcdab abc"), []byte{4})
	f.Add("red", "", []byte("red anet-redacted-key"), []byte{})
	f.Fuzz(func(t *testing.T, key, placeholder string, body, cuts []byte) {
		if key == "" || len(key) > 512 || len(placeholder) > 512 {
			return
		}
		k, err := newScrub(key, placeholder, "up.example", slog.New(slog.DiscardHandler))
		if err != nil {
			if strings.Contains(err.Error(), "every byte") {
				return // a key of every byte that is not a letter is refused, as New would
			}
			t.Fatalf("newScrub(%q, %q): %v", key, placeholder, err)
		}
		if got, want := index(body, []byte(key)), bytes.Index(body, []byte(key)); got != want {
			t.Fatalf("index(%q, %q) = %d, want %d", body, key, got, want)
		}
		whole := scrubAll(k, body)
		got := writeCut(t, k, body, cuts)
		if !bytes.Equal(got, whole) {
			t.Fatalf("answer %q cut by %v became %q, whole %q", body, cuts, got, whole)
		}
		if len(got) != len(body) {
			t.Fatalf("answer %q (%d bytes) became %q (%d bytes)", body, len(body), got, len(got))
		}
		secrets := []string{key}
		if placeholder != "" {
			secrets = append(secrets, placeholder)
		}
		var spelt []string
		for _, s := range secrets {
			spelt = append(spelt, s, strings.ReplaceAll(s, "/", `\/`), url.QueryEscape(s))
			if utf8.ValidString(s) {
				j, _ := json.Marshal(s)
				spelt = append(spelt, string(j[1:len(j)-1]))
			}
		}
		for _, s := range spelt {
			if bytes.Contains(got, []byte(s)) {
				t.Fatalf("answer %q became %q, which holds %q", body, got, s)
			}
		}
		clean := true
		for _, p := range k.pats {
			clean = clean && !bytes.Contains(body, p.b)
		}
		if clean && !bytes.Equal(got, body) {
			t.Fatalf("answer %q holds no secret and became %q", body, got)
		}

		h, _ := k.replaceFold(string(body))
		if len(h) != len(body) {
			t.Fatalf("header %q (%d bytes) became %q (%d bytes)", body, len(body), h, len(h))
		}
		for _, s := range spelt {
			if indexFold(h, s) >= 0 {
				t.Fatalf("header %q became %q, which holds %q ignoring case", body, h, s)
			}
		}
		if k.indexAny(string(body)).at < 0 && h != string(body) {
			t.Fatalf("header %q holds no secret and became %q", body, h)
		}
	})
}

// writeCut writes data through the agent's side of the proxy in pieces whose lengths cuts
// gives (what is left after them, in one piece).
func writeCut(t *testing.T, k *keyScrub, data, cuts []byte) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	cw := &countingWriter{ResponseWriter: rec, total: new(atomic.Int64), scrub: k}
	for _, c := range cuts {
		n := min(int(c), len(data))
		if _, err := cw.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
	if _, err := cw.Write(data); err != nil {
		t.Fatal(err)
	}
	cw.end()
	if cw.n != int64(rec.Body.Len()) {
		t.Fatalf("counted %d bytes, the agent got %d", cw.n, rec.Body.Len())
	}
	return rec.Body.Bytes()
}
