//go:build darwin || linux

package seatbelt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"anet.dev/anet/pkg/sandbox/launch"
	"golang.org/x/sys/unix"
)

// WrapCommand is anet-sandboxd's hidden subcommand that starts every run: it sets the run's
// resource limits on itself and starts sandbox-exec under them, so the agent and everything it
// forks inherit them. `anet-sandboxd seatbelt-run LIMITS… -- /usr/bin/sandbox-exec …`.
const WrapCommand = "seatbelt-run"

// apply sets the limits on this process. Soft and hard are the same: nothing in the run can
// raise one back.
func (l RunLimits) apply() error {
	set := func(name string, res int, v uint64) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("set %s to %d: %w", name, v, err)
		}
		return nil
	}
	if err := set("RLIMIT_CORE", unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{{"RLIMIT_CPU", unix.RLIMIT_CPU, l.CPU}, {"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, l.FileSize}, {"RLIMIT_NPROC", unix.RLIMIT_NPROC, l.Procs}} {
		if r.v != 0 {
			if err := set(r.name, r.res, r.v); err != nil {
				return err
			}
		}
	}
	if l.OpenFiles != 0 {
		// Through package syscall, which then stops restoring the soft limit it found at
		// start in the children it execs: the child gets this limit, not the old one.
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: l.OpenFiles, Max: l.OpenFiles}); err != nil {
			return fmt.Errorf("set RLIMIT_NOFILE to %d: %w", l.OpenFiles, err)
		}
	}
	return nil
}

// parentPoll is how often the wrapper looks whether the launcher is still its parent.
const parentPoll = 250 * time.Millisecond

// Wrap is the wrapper: it applies lim to itself, starts argv in a session of its own (no
// terminal to inject into, and a group no process of another session can join or be joined
// from), forwards TERM, INT and HUP to that group, kills the group when its own parent (the
// launcher) is gone (docs/architecture.md rule 5: no run outlives the node), and returns the
// child's status, 128+n when signal n ended it. Its own failures are reported on stderr with
// the prefix "anet-sandboxd seatbelt-run:" and status 125.
func Wrap(lim RunLimits, argv []string, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "anet-sandboxd %s: %v\n", WrapCommand, err)
		return 125
	}
	if len(argv) == 0 {
		return fail(errors.New("no command"))
	}
	parent := os.Getppid()
	if err := lim.apply(); err != nil {
		return fail(err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(parentPoll)
	defer tick.Stop()
	for {
		select {
		case sig := <-sigs:
			_ = syscall.Kill(-pgid, sig.(syscall.Signal))
		case <-tick.C:
			if os.Getppid() != parent {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-done
				return launch.SignalExit(syscall.SIGKILL)
			}
		case err := <-done:
			// What is left of the group goes with the run.
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return exitStatus(err)
		}
	}
}

// exitStatus maps a Wait error to a shell-style status.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return launch.SignalExit(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 125
}
