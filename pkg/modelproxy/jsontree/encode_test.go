package jsontree

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// referenceEncode is what the proxy sent before Encode was written by hand: the
// encoding/json form with HTML escaping off.
func referenceEncode(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("reference encode: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// E8: the body sent upstream is the one the rules checked, re-encoded; the hand-written
// encoder must write exactly what encoding/json writes, escapes and key order included, or
// the upstream could read something other than what was checked.
func TestEncodeObjectMatchesEncodingJSON(t *testing.T) {
	bodies := []string{
		`{"model":"claude-opus-5-5","max_tokens":128000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"a":"<tag>&amp;\u2028\u2029\u0000\u001f\u007f\b\f\n\r\t\"\\/","b":[1,-0.5,1e10,2E-3,0,-0],"c":{"z":null,"y":true,"x":false,"":{}},"d":[],"e":[[{}]]}`,
		`{"é":"日本語 🎉","k\u00e9y":"\ud83d\ude00","lone":"\ud800","ctl":"\u0001\u0002\u001b"}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"` + string([]byte{0xff, 0xfe, 'a', 0xc3}) + `"}]}]}`,
		`{"n":123456789012345678901234567890,"f":1.000000000000000000001,"neg":-12.5e+7}`,
	}
	for _, b := range bodies {
		o, ref := Decode([]byte(b))
		if ref != nil {
			t.Fatalf("decode %q: %v", b, ref)
		}
		got, err := Encode(o, 0)
		if err != nil {
			t.Fatalf("encode %q: %v", b, err)
		}
		if want := referenceEncode(t, o); !bytes.Equal(got, want) {
			t.Errorf("body %q:\n got %s\nwant %s", b, got, want)
		}
	}
	// Random trees with random strings: every byte value, every escape, invalid UTF-8.
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		o := randomObject(r, 3)
		got, err := Encode(o, 0)
		if err != nil {
			t.Fatalf("tree %d: %v", i, err)
		}
		if want := referenceEncode(t, o); !bytes.Equal(got, want) {
			t.Fatalf("tree %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// E8: a number the rules did not get from the decoder is checked as encoding/json checks it:
// an invalid literal is an error, never raw bytes in the body.
func TestEncodeObjectRefusesInvalidNumber(t *testing.T) {
	for _, n := range []string{"1 ", "01", "1.", ".5", "1e", "+1", "0x10", "1,2", `1"}`, "NaN", "--1"} {
		if _, err := Encode(Object{"max_tokens": json.Number(n)}, 0); err == nil {
			t.Errorf("number %q was encoded", n)
		}
		if _, err := json.Marshal(json.Number(n)); err == nil {
			t.Errorf("encoding/json accepts %q: the test's premise is wrong", n)
		}
	}
	got, err := Encode(Object{"a": json.Number("")}, 0)
	if err != nil || string(got) != `{"a":0}` {
		t.Errorf("empty number = %s, %v; want {\"a\":0} as encoding/json writes it", got, err)
	}
}

func randomObject(r *rand.Rand, depth int) Object {
	o := Object{}
	for range r.IntN(5) {
		o[randomString(r)] = randomValue(r, depth-1)
	}
	return o
}

func randomValue(r *rand.Rand, depth int) any {
	k := r.IntN(7)
	if depth <= 0 && k >= 5 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return json.Number([]string{"0", "-1", "3.25", "1e-7", "123456789012345678901234567890"}[r.IntN(5)])
	case 3, 4:
		return randomString(r)
	case 5:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomValue(r, depth-1)
		}
		return a
	}
	return randomObject(r, depth-1)
}

func randomString(r *rand.Rand) string {
	pieces := []string{"a", "Z", " ", "\"", "\\", "/", "<", ">", "&", "\u2028", "\u2029", "é", "日", "🎉", "\x7f", "\ufffd"}
	b := make([]byte, 0, 16)
	for range r.IntN(12) {
		if r.IntN(3) == 0 {
			b = append(b, byte(r.IntN(256))) // any byte: controls, lone continuation bytes
		} else {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
	}
	return string(b)
}
