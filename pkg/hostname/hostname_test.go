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
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := decodePunycode(c.in)
			if err != nil || got != c.want {
				t.Fatalf("decodePunycode(%q) = %q, %v, want %q", c.in, got, err, c.want)
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
