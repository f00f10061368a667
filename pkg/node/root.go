package node

import (
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/reasons"
)

// RunningAsRoot warns that the daemon runs as root. The node is built to run as the
// operator's ordinary user: as root, a trusted peer's direct-mode agent gets root's rights
// (P4) and a bug anywhere costs more. It is a warning, not a refusal, so a throw-away machine
// whose only user is root can still run `make run`.
const RunningAsRoot reasons.Code = "running_as_root"

func init() {
	reasons.Register(reasons.Entry{Code: RunningAsRoot, Kind: reasons.KindWarning,
		Text: "anetd runs as root; run it as an ordinary user (systemctl --user, or the anetd@USER system unit)", Requirement: "P4"})
}

func rootWarnings(euid int) []control.Warning {
	if euid != 0 {
		return nil
	}
	return []control.Warning{{Code: string(RunningAsRoot), Text: reasons.Text(RunningAsRoot)}}
}
