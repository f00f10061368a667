package doctor

import (
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/reasons"
)

// S7, S8, F2: node.wall is the running node's last proof: it fails with wall_unproven while
// that proof stands failed, naming the first failed item, what it saw and its own fix; it
// passes, saying when, why and on which tier, when the proof passed, and before the first.
func TestWallCheckS7(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	if c := WallCheck(nil); !c.OK || c.Name != "node.wall" || !strings.Contains(c.Detail, "anet doctor --prove") {
		t.Fatalf("no proof yet: %+v", c)
	}
	if c := WallCheck(&control.WallProof{At: at, OK: true, Why: "daily", Tier: "vm"}); !c.OK || !strings.Contains(c.Detail, "(daily, tier vm)") {
		t.Fatalf("passed proof: %+v", c)
	}
	failed := &control.WallProof{At: at, Why: "reload", Tier: "bwrap", Failed: []string{"egress.self-test", "sandbox.attack.x"},
		Items: []check.Check{{Name: "egress.self-test", Detail: "helper_down: egress is down", Fix: "anet status shows the helper"}, {Name: "sandbox.attack.x", Detail: "open"}}}
	c := WallCheck(failed)
	if c.OK || c.Code != reasons.WallUnproven || c.Requirement != "S7" || c.Fix != "anet status shows the helper" ||
		!strings.Contains(c.Detail, "(reload, tier bwrap): egress.self-test failed: helper_down: egress is down (and 1 more)") {
		t.Fatalf("failed proof: %+v", c)
	}
	failed.Items[0].Fix = ""
	if c := WallCheck(failed); c.Fix != "anet doctor --prove proves it again" {
		t.Fatalf("failed item without a fix: fix %q, want the prove command", c.Fix)
	}
}
