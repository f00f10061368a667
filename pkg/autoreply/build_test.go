package autoreply

import (
	"os/exec"
	"strings"
	"testing"
)

// C5: `-tags noautoreply` removes this package (and its sub-packages) from anetd; without the
// tag anetd links it, so the check cannot pass by looking at the wrong binary.
func TestNoAutoReplyBuildDropsEngine(t *testing.T) {
	for _, c := range []struct {
		name  string
		tags  string
		links bool
	}{
		{"default build", "", true},
		{"noautoreply", "noautoreply", false},
		{"noautoreply with anettest", "noautoreply,anettest", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"list", "-deps"}
			if c.tags != "" {
				args = append(args, "-tags", c.tags)
			}
			out, err := exec.Command("go", append(args, "anet.dev/anet/cmd/anetd")...).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps: %v\n%s", err, out)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 10 {
				t.Fatalf("go list -deps gave %d packages: the check would prove nothing", len(deps))
			}
			linked := []string{}
			for _, d := range deps {
				if d == "anet.dev/anet/pkg/autoreply" || strings.HasPrefix(d, "anet.dev/anet/pkg/autoreply/") || d == "anet.dev/anet/pkg/agents" {
					linked = append(linked, d)
				}
			}
			if (len(linked) > 0) != c.links {
				t.Fatalf("anetd (tags %q) links %v, want links=%v", c.tags, linked, c.links)
			}
		})
	}
}
