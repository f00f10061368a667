package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestEgressAllowGood lists host names H2 accepts.
func TestEgressAllowGood(t *testing.T) {
	good := []string{
		"pypi.org", "files.pythonhosted.org", "xn--bcher-kva.de", "a-b.example.com", "1password.com",
		"registry.npmjs.org", "x.y.z.example.co.uk", strings.Repeat("a", 63) + ".com",
		"api.anthropic.com.example.net", "anthropic.com", "cafe.example", "api.openai.org",
	}
	for _, g := range good {
		t.Run(g, func(t *testing.T) {
			if err := ValidateEgressAllow([]string{g}, "https://llm.example.com/v1"); err != nil {
				t.Fatalf("ValidateEgressAllow([%q]) = %v, want nil", g, err)
			}
		})
	}
	sixtyFour := make([]string, 64)
	for i := range sixtyFour {
		sixtyFour[i] = fmt.Sprintf("h%d.example.com", i)
	}
	if err := ValidateEgressAllow(sixtyFour, ""); err != nil {
		t.Errorf("ValidateEgressAllow(64 entries) = %v, want nil", err)
	}
	if err := ValidateEgressAllow(nil, ""); err != nil {
		t.Errorf("ValidateEgressAllow(nil) = %v, want nil", err)
	}
}

// TestEgressAllowRefused covers every H2/H3 refusal class: the error names the entry and rule.
func TestEgressAllowRefused(t *testing.T) {
	const apiBase = "https://LLM.example.com:8443/v1"
	cases := []struct{ name, entry, rule, msg string }{
		{"wildcard", "*.pypi.org", "H2", "wildcards are not allowed"},
		{"wildcard label", "pypi.*", "H2", "wildcards are not allowed"},
		{"ipv4", "93.184.216.34", "H2", "IP addresses are not allowed"},
		{"ipv4 loopback", "127.0.0.1", "H2", "IP addresses are not allowed"},
		{"short form", "127.1", "H2", "IP addresses are not allowed, in any numeric form"},
		{"hex form", "0x7f.0.0.1", "H2", "in any numeric form"},
		{"hex form upper case", "0X7F.0.0.1", "H2", "in any numeric form"},
		{"hex last label", "127.0.0.0x1", "H2", "in any numeric form"},
		{"integer form", "2130706433", "H2", "in any numeric form"},
		{"octal form", "017700000001", "H2", "in any numeric form"},
		{"numeric trailing dot", "127.1.", "H2", "in any numeric form"},
		{"ipv6", "::1", "H2", "IP addresses are not allowed"},
		{"ipv6 full", "2001:db8::1", "H2", "IP addresses are not allowed"},
		{"ipv6 brackets", "[::1]", "H2", "IP addresses are not allowed"},
		{"ipv6 brackets port", "[2001:db8::1]:443", "H2", "IP addresses are not allowed"},
		{"ipv4 mapped", "::ffff:127.0.0.1", "H2", "IP addresses are not allowed"},
		{"ipv6 zone", "fe80::1%eth0", "H2", "IP addresses are not allowed"},
		{"ip with port", "127.0.0.1:443", "H2", "IP addresses are not allowed"},
		{"port", "pypi.org:443", "H2", "ports are not allowed"},
		{"colon", "pypi.org:", "H2", "ports are not allowed"},
		{"localhost", "localhost", "H2", "localhost is not allowed"},
		{"dot localhost", "app.localhost", "H2", "names ending in .localhost"},
		{"local", "printer.local", "H2", "names ending in .local are on the local network"},
		{"internal", "db.corp.internal", "H2", "names ending in .internal"},
		{"lan", "nas.lan", "H2", "names ending in .lan"},
		{"home.arpa", "router.home.arpa", "H2", "names ending in .home.arpa"},
		{"bare home.arpa", "home.arpa", "H2", "names ending in .home.arpa"},
		{"upper case", "PyPI.org", "H2", `must be lower case (write "pypi.org")`},
		{"trailing dot", "pypi.org.", "H2", `must not end with a dot (write "pypi.org")`},
		{"single label", "pypi", "H2", "at least one dot"},
		{"leading hyphen", "-bad.example.com", "H2", "starts or ends with '-'"},
		{"trailing hyphen", "bad-.example.com", "H2", "starts or ends with '-'"},
		{"underscore", "bad_name.example.com", "H2", "has the character '_'"},
		{"empty label", "pypi..org", "H2", "empty label"},
		{"long label", strings.Repeat("a", 64) + ".com", "H2", "longer than 63"},
		{"unicode", "bücher.de", "H2", "punycode (xn--"},
		{"url", "https://pypi.org", "H2", "not a URL"},
		{"path", "pypi.org/simple", "H2", "not a URL"},
		{"userinfo", "user@pypi.org", "H2", "not a URL"},
		{"empty", "", "H2", "is empty"},
		{"space", "pypi.org ", "H2", "spaces or control characters"},
		{"newline", "pypi.org\nevil.com", "H2", "spaces or control characters"},
		{"anthropic", "api.anthropic.com", "H3", "is a model-service host"},
		{"openai", "api.openai.com", "H3", "is a model-service host"},
		{"openai upper case", "API.OPENAI.COM", "H2", "must be lower case"},
		{"api_base host", "llm.example.com", "H3", "is the api_base host"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateEgressAllow([]string{"pypi.org", c.entry}, apiBase)
			var ee *EgressError
			if !errors.As(err, &ee) {
				t.Fatalf("ValidateEgressAllow([pypi.org %q]) = %v, want an *EgressError", c.entry, err)
			}
			if ee.Rule != c.rule || ee.Entry != c.entry || ee.Index != 1 || !strings.Contains(ee.Msg, c.msg) {
				t.Fatalf("ValidateEgressAllow(%q) = %+v, want rule %s, index 1, message containing %q", c.entry, ee, c.rule, c.msg)
			}
			want := fmt.Sprintf("egress_allow entry %q: ", c.entry)
			if s := err.Error(); !strings.HasPrefix(s, want) || !strings.HasSuffix(s, "("+c.rule+")") {
				t.Fatalf("error text = %q, want it to name the entry and (%s)", s, c.rule)
			}
		})
	}
}

func TestEgressAllowList(t *testing.T) {
	t.Run("65 entries", func(t *testing.T) {
		list := make([]string, 65)
		for i := range list {
			list[i] = fmt.Sprintf("h%d.example.com", i)
		}
		err := ValidateEgressAllow(list, "")
		if err == nil || err.Error() != "egress_allow: 65 entries; at most 64 are allowed (H2)" {
			t.Fatalf("ValidateEgressAllow(65 entries) = %v, want the H2 limit", err)
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		err := ValidateEgressAllow([]string{"pypi.org", "files.pythonhosted.org", "pypi.org"}, "")
		if err == nil || err.Error() != `egress_allow entry "pypi.org": is listed twice (also entry 1) (H2)` {
			t.Fatalf("ValidateEgressAllow(duplicate) = %v", err)
		}
	})
	t.Run("every bad entry reported", func(t *testing.T) {
		err := ValidateEgressAllow([]string{"*.a.com", "pypi.org", "10.0.0.1"}, "")
		if n := len(unjoin(err)); n != 2 {
			t.Fatalf("ValidateEgressAllow = %v (%d errors), want 2", err, n)
		}
	})
	t.Run("in the file, on the entry's line", func(t *testing.T) {
		src := "auto_reply:\n  api_base: https://llm.example.com/v1\n  agent: opencode\n  egress_allow:\n    - pypi.org\n    - llm.example.com\n"
		want := `config.yaml:6: auto_reply.egress_allow: entry "llm.example.com": is the api_base host; agents reach the model only through the node (H3)`
		if got := parseErr(t, src); got != want {
			t.Fatalf("Parse error = %q, want %q", got, want)
		}
	})
}
