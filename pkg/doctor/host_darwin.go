package doctor

import (
	"os/exec"
	"strings"

	"anet.dev/anet/pkg/check"
)

// HostChecks runs the checks that need no sandbox: here, Seatbelt's (M1).
func (h Host) HostChecks() []check.Check {
	out, _ := exec.Command("/usr/bin/sw_vers", "-productVersion").Output()
	return h.seatbeltChecks(strings.TrimSpace(string(out)))
}
