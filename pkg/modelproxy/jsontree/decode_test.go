package jsontree

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
)

// E8: the fast parser must build exactly the tree encoding/json builds, and accept nothing
// encoding/json refuses; what it does not accept goes to encoding/json. Over fixed bodies
// (escapes, surrogates, invalid UTF-8, numbers, duplicates, deep nesting, every kind of
// syntax error) and thousands of random mutations of them.
func TestFastDecodeAgreesWithEncodingJSON(t *testing.T) {
	corpus := []string{
		`{"model":"claude-opus-5-5","max_tokens":128000,"messages":[{"role":"user","content":"hi"}]}`,
		` {"a" : [ 1 , -0.5e+3 , 0 , -0 , 1E9 , true , false , null , {} , [] , "" ] } `,
		`{"s":"\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00\ud800\udc00x\ud800\u0041\udc00\ud800","t":"日本 é"}`,
		`{"dup":1,"dup":{"x":2},"dup":"last"}`,
		`{"t":"→ ü 日本 😀","u":"é\n→","role":"user","usage":"id"}`,
		`{"k\u0065y":"v","":""}`,
		`{"bad":"` + "\xff\xfe\xed\xa0\x80\xc3(" + `"}`,
		`{"deep":` + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + `}`,
		`{"deep":` + strings.Repeat(`{"a":`, 50) + `1` + strings.Repeat("}", 50) + `}`,
		`{"n":01}`, `{"n":1.}`, `{"n":.5}`, `{"n":-}`, `{"n":1e}`, `{"n":+1}`, `{"n":0x1}`, `{"n":NaN}`,
		`{"a":1,}`, `{"a":[1,]}`, `{,}`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{"a":1 "b":2}`, `{'a':1}`,
		`{"a":truex}`, `{"a":nul}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"\x01\"}",
		`{"a":"unterminated}`, `{"a":1}x`, `{"a":1}{}`, `{"a":1} `, `[1]`, `"s"`, `1`, `null`, ``, `   `,
		"\xef\xbb\xbf{}", `{"a":1`, `{"a":[`, `{"a":"\`, `{"a":"\ud800\u`, `{"a":"\ud800\uZZZZ"}`,
	}
	check := func(body string) {
		t.Helper()
		b := []byte(body)
		fast, ok := fastDecode(b)
		std, ref := decodeObjectStd([]byte(body))
		if !ok {
			return // encoding/json decides
		}
		if ref != nil {
			t.Fatalf("fast parser accepted what encoding/json refuses (%v): %q", ref, body)
		}
		// The tree's strings are cut from a copy of the body, never from the body itself:
		// the caller's buffer can change after the decode without changing the tree.
		for i := range b {
			b[i] = 'X'
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("body %q:\nfast %#v\n std %#v", body, fast, std)
		}
	}
	for _, b := range corpus {
		check(b)
	}
	for _, b := range corpus[:8] {
		if _, ok := fastDecode([]byte(b)); !ok && !strings.Contains(b, "[[[") {
			t.Errorf("fast parser refused a well-formed object, so it is not the fast path: %q", b)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	const alphabet = "{}[],:\"\\/ \t\n0123456789-+.eEtrufalsn\x00\x1f\x7f\xc3\xa9\xff\xed\xa0\x80uDd8bfx"
	for range 50000 {
		check(testkit.Mutate(r, corpus[r.IntN(len(corpus))], alphabet))
	}
}
