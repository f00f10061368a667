package launch

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// What every backend's run does alike, written once: the shell's exit-status convention
// (SignalExit, SignalOf, StatusOf), the cgroup files'
// number formats (cgroupfs.go), and the watch each run embeds (watch.go).

// SignalExit is the status of a process that signal sig ended, by the shell's convention
// (128+n), which init reports from inside a run and every backend passes on.
func SignalExit(sig syscall.Signal) int { return 128 + int(sig) }

// SignalOf is the signal a status by that convention names; 0 for a plain exit.
func SignalOf(status int) int {
	if status > 128 && status < 128+65 {
		return status - 128
	}
	return 0
}

// Killed is the status and signal of a run its watch killed (a limit, the grace period run
// out, StopAll).
func Killed() (status, signal int) {
	return SignalExit(syscall.SIGKILL), int(syscall.SIGKILL)
}

// RunHostname is a run's hostname unless its backend is told another: nothing of the host's
// name reaches the run.
const RunHostname = "anet-run"

// ResolveSelf is the real path of anet-sandboxd's binary: self, or this process's own
// executable when self is "". Every backend binds or runs it by that path.
func ResolveSelf(self string) (string, error) {
	if self == "" {
		p, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find own binary: %w", err)
		}
		self = p
	}
	real, err := filepath.EvalSymlinks(self)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", self, err)
	}
	return real, nil
}

// LogOrDiscard is log, or a logger that discards when it is nil.
func LogOrDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
