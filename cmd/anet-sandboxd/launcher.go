package main

import (
	"log/slog"
	"os"
	"path/filepath"

	"anet.dev/anet/pkg/config"

	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// newLauncher is the Launcher every subcommand uses: direct runs and the platform's backend
// (backends_<os>.go links them). One that cannot be set up starts nothing (P2) and says why.
func newLauncher(log *slog.Logger) (sandbox.Launcher, string, error) {
	o := launch.Options{Log: log}
	// A passing probe is kept for the next process too (S7: exec is a new process each time),
	// in the runtime directory that every run has hidden.
	if paths, err := config.DefaultPaths(nil); err == nil {
		o.ProbeCacheDir = filepath.Join(paths.RuntimeDir, "probe")
	}
	l, err := launch.New(o)
	if err != nil {
		return launch.Unavailable{Err: err}, "", err
	}
	return l, l.BackendName(), nil
}

// closeInheritedFds marks every fd above stdio that the shell (or any parent) left open as
// close-on-exec, so none reaches a run; the launcher passes its own fds explicitly.
func closeInheritedFds() { _ = privsep.CloseOnExecFrom(3) }

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
