//go:build anettest

package jsontree

import (
	"bytes"
	"reflect"
	"testing"
)

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
		o, r := Decode(b)
		if (r == nil) != (ref == nil) {
			t.Fatalf("Decode(%q) refusal %v, encoding/json %v", b, r, ref)
		}
		if r != nil {
			return
		}
		enc, err := Encode(o, len(b))
		if err != nil {
			t.Fatalf("Encode(decode(%q)): %v", b, err)
		}
		if want := referenceEncode(t, o); !bytes.Equal(enc, want) {
			t.Fatalf("body %q:\n encoded %s\nencoding/json %s", b, enc, want)
		}
		back, r := Decode(enc)
		if r != nil {
			t.Fatalf("decode(encode(decode(%q))) refused: %v: %s", b, r, enc)
		}
		again, _ := Encode(back, 0)
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
