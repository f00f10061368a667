package main

import (
	"strings"
	"testing"

	"anet.dev/anet/pkg/sandbox"
)

// S6: without cgroup limits exec warns and names the fix; asked for --memory or --tasks it
// refuses, since the limit would not exist. With full limits, or none known (the start
// refuses with its own reason), it says nothing.
func TestLimitsNotice(t *testing.T) {
	none := sandbox.CgroupNone
	if msg, refuse := limitsNotice(none, false, false); refuse || !strings.Contains(msg, "no_cgroup_limits") || !strings.Contains(msg, "fix: ") {
		t.Errorf("no limits, none asked: %q, refuse %v", msg, refuse)
	}
	for _, asked := range [][2]bool{{true, false}, {false, true}, {true, true}} {
		if msg, refuse := limitsNotice(none, asked[0], asked[1]); !refuse || !strings.Contains(msg, "cannot be enforced") {
			t.Errorf("no limits, asked %v: %q, refuse %v", asked, msg, refuse)
		}
	}
	for _, lim := range []sandbox.CgroupLimits{sandbox.CgroupFull, ""} {
		if msg, refuse := limitsNotice(lim, true, true); msg != "" || refuse {
			t.Errorf("limits %q: %q, refuse %v", lim, msg, refuse)
		}
	}
}
