package hostname

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzProblem (H2, H4): every name Problem accepts is a canonical host name: lower-case
// ASCII letters, digits, hyphens and dots, at most 253 bytes, labels of 1..63 bytes, and each
// "xn--" label is exactly the encoding of a U-label that decodes to non-ASCII text.
func FuzzProblem(f *testing.F) {
	for _, s := range []string{"pypi.org", "xn--mnchen-3ya.de", "xn--9.de", "PyPI.org", "127.1",
		"10.0.0.1", "printer.local", "intranet", "*.pypi.org", "pypi.org:443", "münchen.de",
		"xn---000a.a", "xn--wgv71a119e.jp", "xn--ab---3ra.de", "a..b", "-a.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if Problem(name) != "" {
			return
		}
		if len(name) > 253 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" {
			t.Fatalf("Problem(%q) = \"\", but it is not lower-case ASCII of at most 253 bytes", name)
		}
		for _, l := range strings.Split(name, ".") {
			if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
				t.Fatalf("Problem(%q) = \"\", but label %q is malformed", name, l)
			}
			enc, ok := strings.CutPrefix(l, "xn--")
			if !ok {
				continue
			}
			u, err := decodePunycode(enc)
			if err != nil {
				t.Fatalf("Problem(%q) = \"\", but decodePunycode(%q) = %v", name, enc, err)
			}
			if again, ok := encodePunycode(u); !ok || again != enc {
				t.Fatalf("Problem(%q) = \"\", but encodePunycode(decode(%q)) = %q, %v", name, enc, again, ok)
			}
			if strings.Trim(u, "\x00-\x7f") == "" {
				t.Fatalf("Problem(%q) = \"\", but label %q decodes to ASCII %q", name, l, u)
			}
		}
	})
}

// FuzzPunycode: the codec is a bijection on what it can encode: decode(encode(u)) == u, and
// a string that decodes re-encodes to a string that decodes to the same text.
func FuzzPunycode(f *testing.F) {
	for _, s := range []string{"münchen", "bücher", "日本語", "-000a", "mnchen-3ya", "ab--ü", "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if utf8.ValidString(s) && !strings.ContainsRune(s, utf8.RuneError) {
			if enc, ok := encodePunycode(s); ok {
				if back, err := decodePunycode(enc); err != nil || back != s {
					t.Fatalf("decodePunycode(encodePunycode(%q) = %q) = %q, %v", s, enc, back, err)
				}
			}
		}
		u, err := decodePunycode(s)
		if err != nil {
			return
		}
		enc, ok := encodePunycode(u)
		if !ok {
			t.Fatalf("encodePunycode(decodePunycode(%q) = %q) failed", s, u)
		}
		if back, err := decodePunycode(enc); err != nil || back != u {
			t.Fatalf("decodePunycode(%q) = %q, %v, want %q", enc, back, err, u)
		}
	})
}
