package main

import (
	"log/slog"

	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
)

// newLauncher is the platform's sandbox launcher for serve: bubblewrap on Linux.
func newLauncher(log *slog.Logger) (sandbox.Launcher, error) {
	return bwrap.New(bwrap.Config{Log: log})
}
