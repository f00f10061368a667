package egress_test

import (
	"errors"
	"strings"
	"testing"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egress"
	"anet.dev/anet/pkg/reasons"
)

// TestAllowListAgreesWithConfig: the CLI's check (pkg/config) and the endpoint's (pkg/egress)
// are one rule: they accept and refuse the same entries (H2, H3) in the same words and with
// the same code, so a list the operator could set never makes every run's endpoint fail.
func TestAllowListAgreesWithConfig(t *testing.T) {
	entries := []string{
		"pypi.org", "files.pythonhosted.org", "xn--mnchen-3ya.de", "a-b.example.com", "x.y.z.example",
		"", "PyPI.org", "pypi.org.", ".pypi.org", "pypi..org", "*.pypi.org", "pypi.org:443",
		"https://pypi.org", "user@pypi.org", "10.0.0.1", "151.101.0.223", "::1", "[::1]", "127.1",
		"2130706433", "0x7f.0.0.1", "017700000001", "host.123", "localhost", "foo.localhost",
		"printer.local", "metadata.google.internal", "nas.lan", "router.home.arpa", "intranet",
		"münchen.de", "my_host.example.com", "-a.example.com", "a-.example.com",
		"api.anthropic.com", "api.openai.com", "x.api.openai.com", "llm.example.net",
		"xn--abc-.de", "host.0xff", "a.b", "pypi.org.local", "a.example.lan.", "LLM.example.net",
		// Invalid punycode: once accepted by config alone, refused by the endpoint.
		"xn--9.de", "xn--a.de",
	}
	const apiBase = "https://llm.example.net/v1"
	for _, e := range entries {
		t.Run(e, func(t *testing.T) {
			cfgErr := config.ValidateEgressAllow([]string{e}, apiBase)
			egErr := egress.ValidateAllowList([]string{e}, []string{apiBase})
			if (cfgErr == nil) != (egErr == nil) {
				t.Fatalf("entry %q: config says %v, egress says %v; want the same verdict", e, cfgErr, egErr)
			}
			if cfgErr != nil && !strings.Contains(egErr.Error(), cfgErr.Error()) {
				t.Fatalf("entry %q: egress says %q, config %q; want the same words", e, egErr, cfgErr)
			}
			var ce *config.EgressError
			var re *reasons.Error
			if cfgErr != nil && (!errors.As(cfgErr, &ce) || ce.Reason() != egress.AllowListRefuse || !errors.As(egErr, &re) || re.Code != egress.AllowListRefuse) {
				t.Fatalf("entry %q: codes differ: %v / %v", e, cfgErr, egErr)
			}
		})
	}
}
