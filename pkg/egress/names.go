package egress

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"anet.dev/anet/pkg/reasons"
)

// MaxAllowEntries is H2's cap on the egress allow-list.
const MaxAllowEntries = 64

// builtinModelHosts are the fixed upstreams (E10); they are refused as allow-list entries even
// when the caller forgets to pass them (fail closed twice).
var builtinModelHosts = []string{"api.anthropic.com", "api.openai.com"}

// localSuffixes are H2's local-network names (and RFC 6761's localhost); the same list as
// pkg/config's, so a list the CLI accepts is a list the endpoint accepts.
var localSuffixes = []string{"localhost", "local", "internal", "lan", "home.arpa"}

// hostNameProblem returns why name is not a canonical public DNS host name, or "" when it is.
// The rule is shared by allow-list entries (H2) and CONNECT targets (H4), so a name the
// endpoint is asked for can only match an entry if both pass the same checks. Upper case is
// refused rather than folded: the spec compares names exactly with lower-case entries.
func hostNameProblem(name string) string {
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
		// the cgo resolver (REFERENCE); no top-level domain is numeric.
		return "ends in a numeric label (an IP address in another notation)"
	}
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

// ValidateAllowList checks the operator's egress allow-list (H2, H3): at most 64 entries,
// each a full lower-case host name that is not a wildcard, IP address, port, localhost or
// local-network name, no duplicates, and none a model-service host.
// modelHosts are host names, host:port pairs or URLs (the configured api_base). The error
// names the entry and the rule; it carries the reason code egress_allow_entry_refused.
func ValidateAllowList(entries []string, modelHosts []string) error {
	if len(entries) > MaxAllowEntries {
		return reasons.New(AllowListRefuse, fmt.Sprintf("the list has %d entries, at most %d are allowed (H2)", len(entries), MaxAllowEntries))
	}
	models := append([]string(nil), builtinModelHosts...)
	for _, m := range modelHosts {
		if h := modelHostName(m); h != "" {
			models = append(models, h)
		}
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if p := hostNameProblem(e); p != "" {
			return reasons.New(AllowListRefuse, fmt.Sprintf("entry %q %s (H2)", e, p))
		}
		if seen[e] {
			return reasons.New(AllowListRefuse, fmt.Sprintf("entry %q is listed twice (H2)", e))
		}
		seen[e] = true
		if slices.Contains(models, e) {
			return reasons.New(AllowListRefuse, fmt.Sprintf("entry %q is the model-service host %s; the agent reaches the model through the node (H3)", e, e))
		}
	}
	return nil
}

// modelHostName reduces a model host given as a name, host:port or URL to a lower-case name.
func modelHostName(s string) string {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil {
			s = u.Host
		}
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	return strings.TrimSuffix(strings.ToLower(s), ".")
}

// isNumericLabel reports a label of decimal digits, or 0x and hex digits.
func isNumericLabel(l string) bool {
	if hex, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}
