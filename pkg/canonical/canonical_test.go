package canonical

import (
	"encoding/hex"
	"strings"
	"testing"
)

// The bytes are a contract with every stored chain and every peer: these never change.
func TestEncodeGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"no field", Encode[string]("t-v1"), "742d7631"},
		{"strings", Encode("t-v1", "ab", "", "é"), "742d7631" + "00000002" + "6162" + "00000000" + "00000002" + "c3a9"},
		{"bytes", Encode("t-v1", []byte{0, 1}, make([]byte, 3)), "742d7631" + "00000002" + "0001" + "00000003" + "000000"},
		{"a 256-byte field", Encode("x", strings.Repeat("a", 256)), "78" + "00000100" + strings.Repeat("61", 256)},
	} {
		if g := hex.EncodeToString(c.got); g != c.want {
			t.Errorf("%s: Encode = %s, want %s", c.name, g, c.want)
		}
	}
	// Strings and byte slices with the same content encode the same.
	if a, b := Encode("t", "x", "yz"), Encode("t", []byte("x"), []byte("yz")); string(a) != string(b) {
		t.Errorf("Encode of strings %x != Encode of bytes %x", a, b)
	}
}

func TestDecode(t *testing.T) {
	enc := Encode("t-v1", "ab", "", "é")
	f, err := Decode(enc, "t-v1", 3)
	if err != nil || len(f) != 3 || f[0] != "ab" || f[1] != "" || f[2] != "é" {
		t.Fatalf("Decode(Encode) = %q, %v, want [ab  é]", f, err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want int
		err  string
	}{
		{"other tag", Encode("u-v1", "ab"), 1, `does not start with "t-v1"`},
		{"short tag", []byte("t-"), 1, "does not start"},
		{"truncated length", append([]byte("t-v1"), 0, 0, 0), 1, "field 1: truncated length"},
		{"length past the end", append([]byte("t-v1"), 0, 0, 0, 9, 'a'), 1, "field 1: length 9 past the end"},
		{"fewer fields", Encode("t-v1", "a"), 2, "field 2: truncated length"},
		{"trailing bytes", append(Encode("t-v1", "a"), 'x'), 1, "1 bytes after the last field"},
		{"more fields", Encode("t-v1", "a", "b"), 1, "5 bytes after the last field"},
	} {
		if _, err := Decode(c.data, "t-v1", c.want); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: Decode = %v, want an error containing %q", c.name, err, c.err)
		}
	}
}

// Injective: moving a byte from one field to the next changes the encoding.
func TestEncodeSeparatesFields(t *testing.T) {
	if a, b := Encode("t", "ab", "c"), Encode("t", "a", "bc"); string(a) == string(b) {
		t.Fatalf("Encode(ab, c) == Encode(a, bc) = %x", a)
	}
}
