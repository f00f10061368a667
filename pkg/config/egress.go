package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"anet.dev/anet/pkg/hostname"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// modelServiceHosts are the model services' own hosts: an agent already reaches them through
// the node, so an egress entry for one would be a second, unpinned and unlimited way in (H3).
var modelServiceHosts = []string{"api.anthropic.com", "api.openai.com"}

// localSuffixes name hosts on the operator's own network (H2), plus .localhost (RFC 6761).
var localSuffixes = []string{".local", ".internal", ".lan", ".home.arpa", ".localhost"}

// EgressAllowRefused is the code of every refused allow-list entry, wherever it is checked:
// in the config file, by the CLI, and by the endpoint when it opens a run's tunnel handler.
const EgressAllowRefused reasons.Code = "egress_allow_entry_refused"

// EgressError is one refused egress_allow entry, or a refusal of the list as a whole (Index -1).
type EgressError struct {
	Index int    // position in the list; -1 for list-wide rules
	Entry string // the entry as written
	Rule  string // requirement number: "H2" or "H3"
	Msg   string
}

// Reason is the rule's code.
func (e *EgressError) Reason() reasons.Code { return EgressAllowRefused }

func (e *EgressError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("egress_allow: %s (%s)", e.Msg, e.Rule)
	}
	return fmt.Sprintf("egress_allow entry %q: %s (%s)", e.Entry, e.Msg, e.Rule)
}

// ValidateEgressAllow is the one allow-list rule (H2, H3), for the config file, the CLI and
// the endpoint alike: each entry a full lower-case host name (LDH labels, at least one dot)
// that is no wildcard, IP address in any numeric form, host:port, localhost or local-network
// name, at most 64 entries, no duplicates, and no model-service host (api.anthropic.com,
// api.openai.com, and each of modelHosts: the api_base, as a URL, host:port or name). It
// returns every refusal, each an *EgressError, joined.
func ValidateEgressAllow(entries []string, modelHosts ...string) error {
	var errs []error
	if len(entries) > limits.AllowListEntries {
		errs = append(errs, &EgressError{Index: -1, Rule: "H2",
			Msg: fmt.Sprintf("%d entries; at most %d are allowed", len(entries), limits.AllowListEntries)})
	}
	var apiHosts []string
	for _, m := range modelHosts {
		// An invalid api_base is reported on its own key; compare with what can be read.
		if h := modelHostName(m); h != "" {
			apiHosts = append(apiHosts, h)
		}
	}
	seen := make(map[string]int, len(entries))
	for i, e := range entries {
		if err := checkEgressEntry(e, apiHosts); err != nil {
			err.Index = i
			errs = append(errs, err)
			continue
		}
		if first, dup := seen[e]; dup {
			errs = append(errs, &EgressError{Index: i, Entry: e, Rule: "H2",
				Msg: fmt.Sprintf("is listed twice (also entry %d)", first+1)})
			continue
		}
		seen[e] = i
	}
	return errors.Join(errs...)
}

// checkEgressEntry applies the per-entry rules. The order matters only for the message: the
// most specific rule an entry breaks is named.
func checkEgressEntry(e string, apiHosts []string) *EgressError {
	h2 := func(msg string) *EgressError { return &EgressError{Entry: e, Rule: "H2", Msg: msg} }
	switch {
	case e == "":
		return h2("is empty; each entry must be a host name such as pypi.org")
	case strings.IndexFunc(e, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return h2("contains spaces or control characters; each entry must be one host name")
	case strings.Contains(e, "*"):
		return h2("wildcards are not allowed; list each host name in full")
	case strings.Contains(e, "/") || strings.Contains(e, "@"):
		return h2("must be a host name, not a URL")
	case isIPLiteral(e):
		return h2("IP addresses are not allowed; list the host name")
	case strings.Contains(e, ":"):
		if _, _, err := net.SplitHostPort(e); err == nil {
			return h2("ports are not allowed (only 443 is ever used); list the host name alone")
		}
		return h2("is not a host name (':' is not allowed)")
	case isNumericHost(strings.TrimSuffix(strings.ToLower(e), ".")):
		return h2("IP addresses are not allowed, in any numeric form; list the host name")
	case e != strings.ToLower(e):
		return h2(fmt.Sprintf("must be lower case (write %q)", strings.ToLower(e)))
	case strings.HasSuffix(e, "."):
		return h2(fmt.Sprintf("must not end with a dot (write %q)", strings.TrimSuffix(e, ".")))
	case e == "localhost":
		return h2("localhost is not allowed")
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix(e, s) || e == s[1:] {
			return h2(fmt.Sprintf("names ending in %s are on the local network and not allowed", s))
		}
	}
	if !strings.Contains(e, ".") {
		return h2("must be a full host name with at least one dot, such as pypi.org")
	}
	// The host-name rule CONNECT targets meet too (pkg/hostname): it names the character or
	// label at fault, and checks the punycode of xn-- labels.
	if p := hostname.Problem(e); p != "" {
		return h2(p)
	}
	if !isLDHName(e) {
		return h2("is not a host name (labels of a-z, 0-9 and '-', 1-63 characters, not starting or ending with '-'; use the xn-- form for international names)")
	}
	for _, m := range modelServiceHosts {
		if e == m {
			return &EgressError{Entry: e, Rule: "H3", Msg: "is a model-service host; agents reach the model only through the node"}
		}
	}
	if slices.Contains(apiHosts, e) {
		return &EgressError{Entry: e, Rule: "H3", Msg: "is the api_base host; agents reach the model only through the node"}
	}
	return nil
}

// modelHostName reduces a model host given as a URL, host:port or name to a lower-case name.
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

// isIPLiteral catches IPv6 and dotted-quad forms, with or without brackets, port or zone.
func isIPLiteral(e string) bool {
	s := e
	if h, _, err := net.SplitHostPort(e); err == nil {
		s = h
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	return false
}

// isNumericHost reports the numeric forms that inet_aton and the cgo resolver turn into an
// address (127.1, 0x7f.0.0.1, 017700000001, 2130706433): a name whose last label is digits,
// or 0x and hex digits. No top-level domain is numeric, so no real host name is refused.
func isNumericHost(e string) bool {
	last := e[strings.LastIndexByte(e, '.')+1:]
	if last == "" {
		return false
	}
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}
