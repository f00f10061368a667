package doctor

import (
	"fmt"
	"strconv"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/reasons"
)

// WallCheck is node.wall: the running node's last proof of the wall (S7, S8), as its status
// carries it (with its failed items). It fails while that proof stands failed, naming the first
// failed item, what it saw and its fix; sandboxed turns are refused until a proof passes. A
// node that has not proved it yet passes: anetd proves it at start.
func WallCheck(p *control.WallProof) check.Check {
	const name = "node.wall"
	if p == nil {
		return check.Pass(name, "S7", "not proved yet: anetd proves it at start and every day; anet doctor --prove proves it now")
	}
	what := fmt.Sprintf("proof of %s (%s, tier %s)", p.At.Local().Format(time.DateTime+" MST"), p.Why, p.Tier)
	if p.OK {
		return check.Pass(name, "S7", "passed: "+what)
	}
	c := check.Fail(name, "S7", reasons.WallUnproven, what+" failed")
	c.Fix = "anet doctor --prove proves it again"
	for _, it := range p.Items {
		if it.OK {
			continue
		}
		c.Detail = what + ": " + it.Name + " failed"
		if it.Detail != "" {
			c.Detail += ": " + it.Detail
		}
		if it.Fix != "" {
			c.Fix = it.Fix
		}
		break
	}
	if n := len(p.Failed) - 1; n > 0 {
		c.Detail += " (and " + strconv.Itoa(n) + " more)"
	}
	return c
}
