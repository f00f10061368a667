// Package hostname holds the one rule for what a public DNS host name may look like, shared
// by the egress allow-list as pkg/config reads it (H2), its enforcement copy in the endpoint,
// and CONNECT targets (H4): a name the endpoint is asked for can only match an entry that
// passed the same check, and a list the CLI accepts is one every endpoint accepts. It is a
// leaf package (no network code), so the config reader links nothing more for it.
package hostname

import (
	"fmt"
	"net/netip"
	"strings"
)

// localSuffixes are H2's local-network names (and RFC 6761's localhost); the same list as
// pkg/config's H2 sentence names them too.
var localSuffixes = []string{"localhost", "local", "internal", "lan", "home.arpa"}

// Problem returns why name is not a canonical public DNS host name, or "" when it is.
// The rule is shared by allow-list entries (H2) and CONNECT targets (H4), so a name the
// endpoint is asked for can only match an entry if both pass the same checks. Upper case is
// refused rather than folded: the spec compares names exactly with lower-case entries.
func Problem(name string) string {
	if why := SyntaxProblem(name); why != "" {
		return why
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return "is a single label (like localhost): give the full host name"
	}
	for _, s := range localSuffixes {
		if name == s || strings.HasSuffix(name, "."+s) {
			return fmt.Sprintf("ends in .%s, a local or special-use name", s)
		}
	}
	return ""
}

// SyntaxProblem returns why name is not a well-formed canonical DNS host name, or "" when it
// is: Problem without the rules that only public names obey, so "localhost", "nas" and
// "box.local" pass. A peer's address (pkg/peeraddr) may be on the operator's own network; an
// egress destination (H2, H4) may not.
func SyntaxProblem(name string) string {
	if name == "" {
		return "is empty"
	}
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return "is an IP address"
	}
	if len(name) > 253 {
		return "is longer than 253 characters"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 0x80:
			return "is not ASCII: write international names in punycode (xn--…)"
		case c >= 'A' && c <= 'Z':
			return "has upper-case letters: names are compared exactly and must be lower-case"
		case c == '*':
			return "is a wildcard"
		case c == ':' || c == '[' || c == ']':
			return "has a port or an IPv6 address"
		case c == '@' || c == '/' || c == '\\' || c == '?' || c == '#':
			return "is a URL or has user info, not a host name"
		case c == '.' || c == '-' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'):
		default:
			return fmt.Sprintf("has the character %q (only a-z, 0-9, '-' and '.' are allowed)", c)
		}
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return "has an empty label (a leading, trailing or double dot)"
		}
		if len(l) > 63 {
			return "has a label longer than 63 characters"
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "has a label that starts or ends with '-'"
		}
		if strings.HasPrefix(l, "xn--") && !validPunycode(l) {
			return "has a label that is not valid punycode"
		}
	}
	if isNumericLabel(labels[len(labels)-1]) {
		// 127.1, 2130706433, 0x7f.0.0.1 and 017700000001 are IP addresses to inet_aton and
		// the cgo resolver; no top-level domain is numeric.
		return "ends in a numeric label (an IP address in another notation)"
	}
	return ""
}

// isNumericLabel reports a label of decimal digits, or 0x and hex digits.
func isNumericLabel(l string) bool {
	if hex, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}
