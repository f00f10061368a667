package upstream

import (
	"strings"
	"testing"
)

// E10: each agent's upstream is fixed, or the operator's api_base where the agent needs one.
func TestUpstreamForE10(t *testing.T) {
	for _, c := range []struct {
		agent, base string
		wantHost    string
		wantErr     string
	}{
		{"claude", "", "api.anthropic.com", ""},
		{"claude", "https://api.anthropic.com/", "api.anthropic.com", ""},
		{"claude", "https://proxy.example.com", "", "api_base_refused"},
		{"codex", "", "api.openai.com", ""},
		{"opencode", "", "", "no_api_base"},
		{"hermes", "https://llm.example.com/v1", "llm.example.com", ""},
		{"openclaw", "https://llm.example.com:8443", "llm.example.com:8443", ""},
		{"opencode", "https://[2001:db8::1]/v1", "[2001:db8::1]", ""},
		{"opencode", "https://[2001:DB8::1]:8443/v1", "[2001:db8::1]:8443", ""},
		{"opencode", "http://llm.example.com", "", "api_base_invalid"},
		{"opencode", "http://127.0.0.1:8080", "", "api_base_invalid"},
		{"claude", "https://API.Anthropic.com/v1", "api.anthropic.com", ""},
		{"claude", "https://api.anthropic.com:8443", "", "api_base_refused"},
		{"claude", "http://127.0.0.1:9999", "", "api_base_invalid"},
		{"opencode", "https://user:pw@llm.example.com", "", "api_base_invalid"},
		{"opencode", "https://llm.example.com/?x=1", "", "api_base_invalid"},
		{"cursor", "", "", "agent_unsupported"},
		{"nope", "", "", "agent_unsupported"},
	} {
		t.Run(c.agent+" "+c.base, func(t *testing.T) {
			u, err := For(c.agent, c.base)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("For(%q, %q) = %v, want %s", c.agent, c.base, err, c.wantErr)
				}
				return
			}
			if err != nil || u.Host != c.wantHost {
				t.Fatalf("For(%q, %q) = %q, %v, want %q", c.agent, c.base, u.Host, err, c.wantHost)
			}
		})
	}
}
