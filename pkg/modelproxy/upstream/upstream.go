// Package upstream says where a run's model requests go (E10): the fixed upstream of each
// agent, or the operator's api_base. It is plain data and links no key or proxy code, so that
// the daemon can validate a run policy without linking the model proxy.
package upstream

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"anet.dev/anet/pkg/reasons"
)

// Codes for an api_base that cannot be used (E10, E11).
const (
	APIBaseRefused reasons.Code = "api_base_refused"
	APIBaseInvalid reasons.Code = "api_base_invalid"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: APIBaseRefused, Kind: reasons.KindConfig, Text: "auto_reply.api_base must be empty or https://api.anthropic.com for the claude agent (its only upstream); remove it or choose another agent", Requirement: "E10"},
		reasons.Entry{Code: APIBaseInvalid, Kind: reasons.KindConfig, Text: "auto_reply.api_base must be an https URL with a host name and no user, query or fragment (the key is sent there)", Requirement: "E11"},
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
// https URL; its path replaces the agent-side /v1); cursor cannot be sandboxed. This is the
// one api_base rule: the endpoint applies it to every run, and anetd --check, anetd's start,
// anet config set and anet doctor apply it to the configuration (through pkg/config).
func For(agent, apiBase string) (Upstream, error) {
	switch agent {
	case "claude":
		if strings.TrimSpace(apiBase) != "" {
			u, err := ParseBase(apiBase)
			if err != nil {
				return Upstream{}, err
			}
			if p := strings.TrimRight(u.Path, "/"); u.Host != "api.anthropic.com" || u.Port != "" && u.Port != "443" || (p != "" && p != "/v1") {
				return Upstream{}, reasons.New(APIBaseRefused, fmt.Sprintf("agent claude; api_base host %q", u.Host))
			}
		}
		return Upstream{Agent: agent, KeyProvider: "anthropic", CatalogProvider: "anthropic", Scheme: "https", Host: "api.anthropic.com", BasePath: "/v1", Families: []Family{FamilyAnthropic}}, nil
	case "codex":
		return Upstream{Agent: agent, KeyProvider: "openai", CatalogProvider: "openai", Scheme: "https", Host: "api.openai.com", BasePath: "/v1", Families: []Family{FamilyOpenAI}}, nil
	case "opencode", "hermes", "openclaw":
		if strings.TrimSpace(apiBase) == "" {
			return Upstream{}, reasons.New(reasons.NoAPIBase, "agent "+agent)
		}
		u, err := ParseBase(apiBase)
		if err != nil {
			return Upstream{}, err
		}
		base := strings.TrimRight(u.Path, "/")
		if base == "" {
			base = "/v1"
		}
		host := u.Host
		if u.Port != "" {
			host = net.JoinHostPort(u.Host, u.Port)
		} else if strings.Contains(u.Host, ":") {
			host = "[" + u.Host + "]" // an IPv6 literal stays one in the URL and Host header
		}
		// Which shape a custom service speaks depends on the service; the path decides per
		// request and both rule sets apply in full.
		return Upstream{Agent: agent, KeyProvider: "custom", CatalogProvider: "custom", Scheme: "https", Host: host, BasePath: base, Families: []Family{FamilyAnthropic, FamilyOpenAI}}, nil
	case "cursor":
		return Upstream{}, reasons.New(reasons.AgentUnsupported, "agent cursor")
	default:
		return Upstream{}, reasons.New(reasons.AgentUnsupported, fmt.Sprintf("unknown agent %q", agent))
	}
}

// ForCompletion is the upstream of the openai back-end (P3): api.openai.com, or the
// operator's api_base service when one is set (reached as opencode reaches it).
func ForCompletion(apiBase string) (Upstream, error) { return For(CompletionAgent(apiBase), apiBase) }

// CompletionAgent is the agent whose upstream the openai back-end uses: codex's
// (api.openai.com) without an api_base, opencode's (the api_base service) with one.
func CompletionAgent(apiBase string) string {
	if strings.TrimSpace(apiBase) == "" {
		return "codex"
	}
	return "opencode"
}

// Base is a parsed api_base.
type Base struct {
	Host string // lower case, without brackets or port
	Port string // "" for the default
	Path string // escaped, as written
}

// ParseBase checks an api_base: an absolute https URL with a host, an optional port
// 1-65535 and path, and no user info, query or fragment (keys belong in the keys file, and
// the key is sent to this host: E11). Errors carry APIBaseInvalid and never repeat the URL,
// which may hold a pasted key.
func ParseBase(s string) (Base, error) {
	bad := func(why string) (Base, error) { return Base{}, reasons.New(APIBaseInvalid, why) }
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return bad("must be a URL on one line without control characters")
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return bad("is not a valid URL")
	}
	switch {
	case u.Scheme != "https" || u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return bad("must be an absolute https URL such as https://host/v1")
	case u.User != nil:
		return bad("must not contain user info; keys belong in the keys file")
	case u.RawQuery != "" || u.ForceQuery:
		return bad("must not contain a query (?...)")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return bad("must not contain a fragment (#...)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return bad("has an invalid port (allowed: 1-65535)")
		}
	}
	return Base{Host: strings.ToLower(u.Hostname()), Port: u.Port(), Path: u.EscapedPath()}, nil
}
