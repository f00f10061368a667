package canonical

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzDecode (N1): bytes that decode are exactly the encoding of the fields they decode to.
// So the encoding is unique: two different byte strings never decode to the same fields,
// and a signature over one field list covers one byte string only.
func FuzzDecode(f *testing.F) {
	f.Add(Encode("t-v1", "ab", "", "é"), uint8(3))
	f.Add(append([]byte("t-v1"), 0, 0, 0, 9, 'a'), uint8(1))
	f.Add(append(Encode("t-v1", "a"), 'x'), uint8(1))
	f.Add(Encode("t-v1", "a", "b"), uint8(1))
	f.Add([]byte("t-"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, want uint8) {
		fields, err := Decode(data, "t-v1", int(want))
		if err != nil {
			return
		}
		if len(fields) != int(want) {
			t.Fatalf("Decode(%x, %d) = %d fields", data, want, len(fields))
		}
		if enc := Encode("t-v1", fields...); !bytes.Equal(enc, data) {
			t.Fatalf("Encode(Decode(%x)) = %x, want the same bytes", data, enc)
		}
	})
}

// FuzzEncode (N1): Decode∘Encode is the identity, and the encoding of n fields never
// decodes as another number of fields.
func FuzzEncode(f *testing.F) {
	f.Add("ab", "", "é")
	f.Add("a", "bc", "")
	f.Add("\x00\x00\x00\x01", "x", "\x00")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		in := []string{a, b, c}
		enc := Encode("t-v1", in...)
		got, err := Decode(enc, "t-v1", 3)
		if err != nil || !slices.Equal(got, in) {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", in, got, err)
		}
		for _, n := range []int{0, 1, 2, 4} {
			if got, err := Decode(enc, "t-v1", n); err == nil {
				t.Fatalf("Decode(Encode(%q), %d fields) = %q, want an error", in, n, got)
			}
		}
	})
}
