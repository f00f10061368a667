package integration

import (
	"os"
	"strings"
	"testing"
)

// S8 and H1 through the real CLI: `anet autoreply show | set` for the auto_reply keys,
// validated; adding allowed hosts without a terminal is refused and changes nothing;
// removing is allowed.
func TestAutoReplyCLIShowSet(t *testing.T) {
	n := newNode(t, nodeOptions{config: "# operator's comment\nauto_reply:\n  egress_allow: [pypi.org]\n"})
	cfg := n.path("config", "anet", "config.yaml")
	n.mustAnet("autoreply", "set", "sandbox.runs_per_day", "7")
	n.mustAnet("autoreply", "set", "untrusted", "off")
	out := n.mustAnet("autoreply", "show")
	if !containsAll(out, "runs_per_day: 7", "untrusted: off", "runs_per_peer_per_day: 5", "pypi.org") {
		t.Fatalf("anet autoreply show = %q, want the values set and the defaults", out)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"negative runs", []string{"set", "sandbox.runs_per_day", "-1"}, "runs_per_day"},
		{"unknown key", []string{"set", "bogus", "1"}, "unknown key"},
		{"bad enum", []string{"set", "untrusted", "direct"}, "untrusted"},
		{"add host without terminal", []string{"set", "--egress-allow", "pypi.org,docs.python.org"}, "needs confirmation at a terminal"},
		{"bad host names entry and rule", []string{"set", "--egress-allow", "localhost"}, "H2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := os.ReadFile(cfg)
			_, errOut, err := n.anet(append([]string{"autoreply"}, c.args...)...)
			if err == nil || !strings.Contains(errOut, c.want) {
				t.Fatalf("anet autoreply %v = %v, %q, want an error naming %q", c.args, err, errOut, c.want)
			}
			if after, _ := os.ReadFile(cfg); string(after) != string(before) {
				t.Fatalf("a refused set changed the file:\n%s", after)
			}
		})
	}
	n.mustAnet("autoreply", "set", "--egress-allow", "")
	if out := n.mustAnet("autoreply", "show"); strings.Contains(out, "pypi.org") {
		t.Fatalf("after removing every host: %q", out)
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), "# operator's comment") {
		t.Fatalf("the operator's comment was lost:\n%s", b)
	}
}
