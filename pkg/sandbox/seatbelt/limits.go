package seatbelt

import (
	"runtime"
	"strconv"

	"anet.dev/anet/pkg/sandbox"
)

// RunLimits are the resource limits macOS can put on a run's processes (S6). Zero leaves a
// limit as it is, except Core, which is always 0 (no core file may carry a run's memory to
// disk). A process can lower these, never raise them.
type RunLimits struct {
	// CPU is RLIMIT_CPU in seconds per process: what bounds a process that leaves the run's
	// process group and so outlives its wall clock.
	CPU uint64
	// FileSize is RLIMIT_FSIZE: one file's size while the disk poll catches up.
	FileSize uint64
	// OpenFiles is RLIMIT_NOFILE.
	OpenFiles uint64
	// Procs is RLIMIT_NPROC. macOS counts it per user, not per run: the launcher sets it to
	// the user's processes at the start plus the run's task limit.
	Procs uint64
}

// Args renders l as the wrapper's flags.
func (l RunLimits) Args() []string {
	return []string{"--cpu", strconv.FormatUint(l.CPU, 10), "--fsize", strconv.FormatUint(l.FileSize, 10),
		"--nofile", strconv.FormatUint(l.OpenFiles, 10), "--nproc", strconv.FormatUint(l.Procs, 10)}
}

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
