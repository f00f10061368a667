// Package upstream says where a run's model requests go (E10): the fixed upstream of each
// agent, or the operator's api_base. It is plain data and links no key or proxy code, so that
// the daemon can validate a run policy without linking the model proxy.
package upstream

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"anet.dev/anet/pkg/reasons"
)

// Codes for an api_base that cannot be used (E10, E11).
const (
	APIBaseRefused reasons.Code = "api_base_refused"
	APIBaseInvalid reasons.Code = "api_base_invalid"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: APIBaseRefused, Kind: reasons.KindConfig, Text: "the claude agent always uses https://api.anthropic.com; remove auto_reply.api_base or set it to that", Requirement: "E10"},
		reasons.Entry{Code: APIBaseInvalid, Kind: reasons.KindConfig, Text: "auto_reply.api_base must be an https URL with a host name and no user, query or fragment", Requirement: "E11"},
	)
}

// Family is the wire shape of a model API.
type Family string

const (
	FamilyAnthropic Family = "anthropic"
	FamilyOpenAI    Family = "openai"
)

// Upstream is where one run's model requests go (E10).
type Upstream struct {
	Agent string
	// KeyProvider names the entry of the keys file that holds the key.
	KeyProvider string
	// CatalogProvider names the provider in the models catalog: "custom" for a service at
	// api_base, whose models (and prices, K1) the operator lists in the models override.
	CatalogProvider string
	Scheme, Host    string // Host is host[:port]
	// BasePath replaces the agent-side "/v1" prefix ("/v1" for the fixed upstreams).
	BasePath string
	Families []Family
}

// Addr is the host:port the dialer connects to.
func (u Upstream) Addr() string {
	if _, _, err := net.SplitHostPort(u.Host); err == nil {
		return u.Host
	}
	return net.JoinHostPort(u.Host, "443")
}

// Serves reports whether the upstream speaks f.
func (u Upstream) Serves(f Family) bool { return slices.Contains(u.Families, f) }

const (
	anthropicBase = "https://api.anthropic.com"
	openAIBase    = "https://api.openai.com"
)

// For returns the upstream of agent (E10). claude refuses any api_base other than
// Anthropic's; codex always uses OpenAI's; opencode, hermes and openclaw need apiBase (an
// https URL; its path replaces the agent-side /v1); cursor cannot be sandboxed.
func For(agent, apiBase string) (Upstream, error) {
	switch agent {
	case "claude":
		if b := strings.TrimRight(strings.TrimSpace(apiBase), "/"); b != "" && b != anthropicBase && b != anthropicBase+"/v1" {
			return Upstream{}, reasons.New(APIBaseRefused, "agent claude")
		}
		return Upstream{Agent: agent, KeyProvider: "anthropic", CatalogProvider: "anthropic", Scheme: "https", Host: "api.anthropic.com", BasePath: "/v1", Families: []Family{FamilyAnthropic}}, nil
	case "codex":
		return Upstream{Agent: agent, KeyProvider: "openai", CatalogProvider: "openai", Scheme: "https", Host: "api.openai.com", BasePath: "/v1", Families: []Family{FamilyOpenAI}}, nil
	case "opencode", "hermes", "openclaw":
		if strings.TrimSpace(apiBase) == "" {
			return Upstream{}, reasons.New(reasons.NoAPIBase, "agent "+agent)
		}
		u, err := url.Parse(strings.TrimSpace(apiBase))
		if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			return Upstream{}, reasons.New(APIBaseInvalid, "agent "+agent)
		}
		if p := u.Port(); p != "" {
			if n, err := net.LookupPort("tcp", p); err != nil || n <= 0 {
				return Upstream{}, reasons.New(APIBaseInvalid, "agent "+agent+": bad port")
			}
		}
		base := strings.TrimRight(u.EscapedPath(), "/")
		if base == "" {
			base = "/v1"
		}
		// Which shape a custom service speaks depends on the service; the path decides per
		// request and both rule sets apply in full.
		return Upstream{Agent: agent, KeyProvider: "custom", CatalogProvider: "custom", Scheme: "https", Host: strings.ToLower(u.Host), BasePath: base, Families: []Family{FamilyAnthropic, FamilyOpenAI}}, nil
	case "cursor":
		return Upstream{}, reasons.New(reasons.AgentUnsupported, "agent cursor")
	default:
		return Upstream{}, reasons.New(reasons.AgentUnsupported, fmt.Sprintf("unknown agent %q", agent))
	}
}
