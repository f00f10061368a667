package egress

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"anet.dev/anet/pkg/hostname"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// builtinModelHosts are the fixed upstreams (E10); they are refused as allow-list entries even
// when the caller forgets to pass them (fail closed twice).
var builtinModelHosts = []string{"api.anthropic.com", "api.openai.com"}

// ValidateAllowList checks the operator's egress allow-list (H2, H3): at most 64 entries,
// each a full lower-case host name that is not a wildcard, IP address, port, localhost or
// local-network name, no duplicates, and none a model-service host.
// modelHosts are host names, host:port pairs or URLs (the configured api_base). The error
// names the entry and the rule; it carries the reason code egress_allow_entry_refused.
func ValidateAllowList(entries []string, modelHosts []string) error {
	if len(entries) > limits.AllowListEntries {
		return reasons.New(AllowListRefuse, fmt.Sprintf("the list has %d entries, at most %d are allowed (H2)", len(entries), limits.AllowListEntries))
	}
	models := append([]string(nil), builtinModelHosts...)
	for _, m := range modelHosts {
		if h := modelHostName(m); h != "" {
			models = append(models, h)
		}
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if p := hostname.Problem(e); p != "" {
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
