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
}

// Probe check names.
const (
	CheckLoopback     = "loopback"
	CheckHostTCP      = "host_tcp"
	CheckHostAbstract = "host_abstract"
	CheckKeyring      = "keyring"
	CheckUserns       = "userns"
)

// probeFailed is a failed S7 check with its reason code (F2).
func probeFailed(name, detail string) check.Check {
	return check.Fail(name, "S7", ProbeCheckCode(name), detail)
}

// ProbeCheckCode maps a failed S7 check to its reason code (F2): the keyring and user
// namespace checks fail when the system call filter does, the others when network isolation
// does.
func ProbeCheckCode(name string) reasons.Code {
	switch name {
	case CheckKeyring, CheckUserns:
		return reasons.SeccompFailed
	default:
		return reasons.NetnsFailed
	}
}
