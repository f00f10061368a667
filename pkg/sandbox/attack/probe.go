package attack

import (
	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
)

// The in-sandbox half of the probe (S7). Each check must see the failure for the right
// reason (an errno the protection produces); any other outcome fails the check.

// ProbeTargets are what the host side opened for the checks.
type ProbeTargets struct {
	// HostPort is a TCP listener on the host's 127.0.0.1 (the canary).
	HostPort int `json:"host_port"`
	// Abstract is the name (without the leading NUL) of a host abstract unix socket.
	Abstract string `json:"abstract"`
	// RelayPort is init's loopback port; the host endpoint echoes one line.
	RelayPort int `json:"relay_port"`
	// VM asks for the two checks of a micro-VM backend (V1): no network device but lo, and
	// the host's process HostPID (started at HostStart, field 22 of /proc/PID/stat) not
	// visible.
	VM        bool   `json:"vm,omitempty"`
	HostPID   int    `json:"host_pid,omitempty"`
	HostStart string `json:"host_start,omitempty"`
}

// Probe check names.
const (
	CheckLoopback     = "loopback"
	CheckHostTCP      = "host_tcp"
	CheckHostAbstract = "host_abstract"
	CheckKeyring      = "keyring"
	CheckUserns       = "userns"
	// The micro-VM backend's two (V1).
	CheckNetDevices  = "net_devices"
	CheckHostProcess = "host_process"
)

// ProbeCheckNames are the checks a probe aimed at t must report: the five S7 properties, and
// the micro-VM backend's two when t.VM. The launcher fails a report that lacks one, whatever
// the sandbox side sent.
func ProbeCheckNames(t ProbeTargets) []string {
	names := []string{CheckLoopback, CheckHostTCP, CheckHostAbstract, CheckKeyring, CheckUserns}
	if t.VM {
		names = append(names, CheckNetDevices, CheckHostProcess)
	}
	return names
}

// probeFailed is a failed probe check with its reason code (F2).
func probeFailed(name, detail string) check.Check {
	return check.Fail(name, probeRequirement(name), ProbeCheckCode(name), detail)
}

func probeRequirement(name string) string {
	if name == CheckNetDevices || name == CheckHostProcess {
		return "V1"
	}
	return "S7"
}

// ProbeCheckCode maps a failed probe check to its reason code (F2): the keyring and user
// namespace checks fail when the system call filter does; a host process in view means the
// sandbox was not set up as built; the others fail when network isolation does.
func ProbeCheckCode(name string) reasons.Code {
	switch name {
	case CheckKeyring, CheckUserns:
		return reasons.SeccompFailed
	case CheckHostProcess:
		return reasons.SandboxStartFailed
	default:
		return reasons.NetnsFailed
	}
}
