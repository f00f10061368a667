package doctor

import (
	"strconv"
	"strings"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
)

// sandboxExec is the program the macOS sandbox runs, by absolute path.
const sandboxExec = "/usr/bin/sandbox-exec"

// seatbeltChecks are the host checks of the macOS sandbox (M1): sandbox-exec is there to
// run, and the macOS version (one of the verified targets or not). Neither proves the
// sandbox works: the probe's self-check, run in the profile, does.
func (h Host) seatbeltChecks(version string) []check.Check {
	sb := check.Check{Name: "sandbox_exec", Requirement: "M1", OK: true, Detail: sandboxExec}
	if _, err := h.LookPath(sandboxExec); err != nil {
		sb.OK, sb.Code, sb.Detail = false, reasons.NoSandboxExec, err.Error()
		sb.Fix = "sandbox-exec is part of macOS: check the system's integrity (it is never found on PATH), or set auto_reply.untrusted to off"
	}
	v := check.Check{Name: "macos", Requirement: "M1", OK: true}
	major, _ := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	switch {
	case version == "":
		v.Detail = "macOS version unknown (sw_vers gave nothing); the self-check before each turn decides"
	case major == 14 || major == 15:
		v.Detail = "macOS " + version + ", a verified target"
	default:
		v.Detail = "macOS " + version + ": the verified targets are 14 and 15; the self-check before each turn decides"
	}
	return []check.Check{sb, v}
}
