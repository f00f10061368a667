package hostname

import (
	"strings"
	"testing"
)

func TestDecodePunycode(t *testing.T) {
	cases := []struct{ in, want string }{
		{"mnchen-3ya", "münchen"},
		{"bcher-kva", "bücher"},
		{"wgv71a119e", "日本語"},
		// RFC 3492 §7.1 (B), Chinese (simplified).
		{"ihqwcrb4cv8a8dqg056pqjye", "\u4ed6\u4eec\u4e3a\u4ec0\u4e48\u4e0d\u8bf4\u4e2d\u6587"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := decodePunycode(c.in)
			if err != nil || got != c.want {
				t.Fatalf("decodePunycode(%q) = %q, %v, want %q", c.in, got, err, c.want)
			}
			if back, ok := encodePunycode(c.want); !ok || back != c.in {
				t.Fatalf("encodePunycode(%q) = %q, %v, want %q", c.want, back, ok, c.in)
			}
		})
	}
}

// The rule as pkg/config and pkg/egress rely on it: each class refused with its reason, real
// names accepted.
func TestProblem(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"pypi.org", ""},
		{"xn--mnchen-3ya.de", ""},
		{"xn--9.de", "punycode"},
		{"PyPI.org", "upper-case"},
		{"127.1", "numeric"},
		{"10.0.0.1", "IP address"},
		{"printer.local", ".local"},
		{"intranet", "single label"},
		{"*.pypi.org", "wildcard"},
		{"pypi.org:443", "port"},
		{"münchen.de", "ASCII"},
	} {
		got := Problem(c.name)
		if (c.want == "") != (got == "") || (c.want != "" && !strings.Contains(got, c.want)) {
			t.Errorf("Problem(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestProblemAcceptsOnlyCanonicalALabels (H2, H4): an allow-list entry and a CONNECT target
// are compared byte for byte, so an "xn--" label must be the one encoding of its U-label and
// that U-label must follow RFC 5891 §4.2.3; otherwise two spellings name one host.
func TestProblemAcceptsOnlyCanonicalALabels(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"xn--mnchen-3ya.de", true},
		{"xn--wgv71a119e.jp", true},
		// Found by fuzzing: decodes to U+0080 as "xn--000a" does, but with a delimiter that
		// the encoder never writes when there is no basic code point.
		{"xn---000a.a", false},
		{"xn---mnchen-o2a.de", false}, // decodes to "-münchen": leading hyphen
		{"xn--mnchen--n2a.de", false}, // "münchen-": trailing hyphen
		{"xn--ab---3ra.de", false},    // "ab--ü": hyphens in positions 3 and 4
		{"xn--mnchen-psa.de", false},  // "mÜnchen": upper case, a second spelling of münchen
		{"xn--ss-tub.de", false},      // starts with U+0308, a combining mark
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Problem(c.name)
			if c.ok && got != "" || !c.ok && !strings.Contains(got, "punycode") {
				t.Fatalf("Problem(%q) = %q, want ok=%v", c.name, got, c.ok)
			}
		})
	}
}
