package seatbelt

import (
	"os"
	"runtime"
	"strings"

	"anet.dev/anet/pkg/sandbox"
)

// runLimits are the resource limits of a run with limits lim (defaults applied) when the
// user has procs processes already (S6).
func runLimits(lim sandbox.Limits, procs int) RunLimits {
	secs := uint64(lim.WallClock.Seconds()+lim.Grace.Seconds()) + 1
	l := RunLimits{
		// A process cannot use more CPU than the wall clock on every core; the bound matters
		// for one that slipped out of the run's group and so outlived the clock.
		CPU:       secs * uint64(runtime.NumCPU()),
		FileSize:  uint64(lim.FileSize),
		OpenFiles: openFiles,
	}
	if procs > 0 {
		l.Procs = uint64(procs) + uint64(lim.Tasks)
	}
	return l
}

// openFiles is a run's RLIMIT_NOFILE: Node raises its soft limit to the hard one, and a few
// thousand descriptors are plenty for an agent and its tools.
const openFiles = 8192

// existing keeps the paths that exist (a refusal shows only on a file that is there).
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// envNames are the names of a run's variables: the launcher's base and those handed in.
func envNames(base, given []string) []string {
	var out []string
	for _, kv := range append(append([]string{}, base...), given...) {
		name, _, _ := strings.Cut(kv, "=")
		out = append(out, name)
	}
	return out
}
