package egress

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// TestValidateAllowList checks H2 (entry form, 64 entries) and H3 (no model-service host).
func TestValidateAllowList(t *testing.T) {
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("h%d.example.com", i)
		}
		return out
	}
	cases := []struct {
		name    string
		entries []string
		models  []string
		wantErr string // substring; empty means valid
	}{
		{"empty list (H1 default)", nil, nil, ""},
		{"the spec's example", []string{"pypi.org", "files.pythonhosted.org"}, nil, ""},
		{"punycode entry", []string{"xn--mnchen-3ya.de"}, nil, ""},
		{"64 entries is the last allowed", many(64), nil, ""},
		{"65 entries refused", many(65), nil, "65 entries; at most 64"},
		{"wildcard", []string{"*.pypi.org"}, nil, "wildcard"},
		{"IPv4 address", []string{"10.0.0.1"}, nil, "IP address"},
		{"public IPv4 address", []string{"151.101.0.223"}, nil, "IP address"},
		{"IPv6 address", []string{"2606:4700::1"}, nil, "IP address"},
		{"bracketed IPv6", []string{"[::1]"}, nil, "IP address"},
		{"port", []string{"pypi.org:443"}, nil, "port"},
		{"localhost", []string{"localhost"}, nil, "localhost is not allowed"},
		{"under localhost", []string{"foo.localhost"}, nil, ".localhost"},
		{".local", []string{"printer.local"}, nil, ".local"},
		{".internal", []string{"metadata.google.internal"}, nil, ".internal"},
		{".lan", []string{"nas.lan"}, nil, ".lan"},
		{".home.arpa", []string{"router.home.arpa"}, nil, ".home.arpa"},
		{"upper case", []string{"PyPI.org"}, nil, "must be lower case"},
		{"U-label", []string{"münchen.de"}, nil, "not ASCII"},
		{"bad punycode", []string{"xn--abc-.de"}, nil, "starts or ends with '-'"},
		{"truncated punycode", []string{"xn--9.de"}, nil, "not valid punycode"},
		{"punycode of a control character", []string{"xn--a.de"}, nil, "not valid punycode"},
		{"trailing dot", []string{"pypi.org."}, nil, "must not end with a dot"},
		{"double dot", []string{"pypi..org"}, nil, "empty label"},
		{"numeric form 127.1", []string{"127.1"}, nil, "in any numeric form"},
		{"decimal form", []string{"2130706433"}, nil, "in any numeric form"},
		{"hex form", []string{"0x7f.0.0.1"}, nil, "in any numeric form"},
		{"octal form", []string{"017700000001"}, nil, "in any numeric form"},
		{"numeric TLD", []string{"host.123"}, nil, "in any numeric form"},
		{"hex TLD", []string{"host.0xff"}, nil, "in any numeric form"},
		{"URL", []string{"https://pypi.org"}, nil, "not a URL"},
		{"user info", []string{"user@pypi.org"}, nil, "not a URL"},
		{"underscore", []string{"my_host.example.com"}, nil, "character '_'"},
		{"empty entry", []string{"pypi.org", ""}, nil, "is empty"},
		{"label too long", []string{strings.Repeat("a", 64) + ".com"}, nil, "longer than 63"},
		{"duplicate", []string{"pypi.org", "pypi.org"}, nil, "listed twice"},
		{"anthropic API (built in, H3)", []string{"api.anthropic.com"}, nil, "model-service host"},
		{"openai API (built in, H3)", []string{"api.openai.com"}, nil, "model-service host"},
		{"name under a model host is not the model host (H3 is exact)", []string{"x.api.openai.com"}, nil, ""},
		{"api_base host as URL (H3)", []string{"llm.example.net"}, []string{"https://llm.example.net:8443/v1"}, "api_base host"},
		{"api_base host upper case", []string{"llm.example.net"}, []string{"LLM.Example.NET."}, "api_base host"},
		{"sibling of api_base allowed", []string{"docs.example.net"}, []string{"llm.example.net"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateAllowList(c.entries, c.models)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateAllowList(%q) = %v, want nil", c.entries, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("ValidateAllowList(%q) = %v, want error containing %q", c.entries, err, c.wantErr)
			}
			var re *reasons.Error
			if !errors.As(err, &re) || re.Code != AllowListRefuse {
				t.Errorf("ValidateAllowList(%q) error code = %v, want %s", c.entries, err, AllowListRefuse)
			}
		})
	}
}

// TestDefaultLimits pins R1's tunnel numbers.
func TestDefaultLimits(t *testing.T) {
	d := DefaultLimits()
	got := fmt.Sprintf("%d %d %d %d", d.OpenTunnels, d.TotalTunnels, d.SentBytes, d.ReceivedBytes)
	want := fmt.Sprintf("%d %d %d %d", 16, 256, 32<<20, 512<<20)
	if got != want {
		t.Fatalf("DefaultLimits() = %s, want %s (R1)", got, want)
	}
}

// TestNewProxyRefusesBadPolicy: the proxy fails closed on a policy that skipped validation.
func TestNewProxyRefusesBadPolicy(t *testing.T) {
	cases := []struct {
		name string
		p    Policy
		want string
	}{
		{"local name", Policy{Allow: []string{"nas.lan"}}, ".lan"},
		{"model host", Policy{Allow: []string{"api.anthropic.com"}}, "model-service host"},
		{"negative limit", Policy{Limits: Limits{OpenTunnels: -1}}, "open_tunnels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewProxy(c.p, Options{Resolver: staticResolver{}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewProxy(%+v) = %v, want error containing %q", c.p, err, c.want)
			}
		})
	}
}
