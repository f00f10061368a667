//go:build unix

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// StartDirect runs a trusted turn unsandboxed (P4): as the operator's user, in its work dir
// <WorkRoot>/<WorkSub> (created link-safely), with the same wall clock as a sandboxed run.
// The agent gets its own process group, which is what the wall clock stops; a trusted agent
// that daemonises escapes that, as it could from any shell of the operator.
func StartDirect(ctx context.Context, spec Spec, stdio Stdio) (Run, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Mode != ModeDirect {
		return nil, fmt.Errorf("start direct %s: mode %q", spec.ID, spec.Mode)
	}
	if spec.WorkRoot == "" {
		return nil, fmt.Errorf("start direct %s: work_root: required in direct mode", spec.ID)
	}
	work, f, err := MkdirUnder(spec.WorkRoot, spec.WorkSub, 0o700)
	if err != nil {
		return nil, fmt.Errorf("start direct %s: %w", spec.ID, err)
	}
	f.Close()
	home, _ := os.UserHomeDir()
	env := append(baseEnv(home, os.TempDir()), spec.Env...)
	lim := spec.Limits.WithDefaults()
	cmd := &exec.Cmd{
		Path: spec.Argv[0], Args: spec.Argv, Env: env, Dir: work,
		Stdin: stdio.Stdin, Stdout: stdio.Stdout, Stderr: stdio.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start direct %s: %w", spec.ID, err)
	}
	r := &directRun{cmd: cmd, lim: lim, done: make(chan struct{})}
	go r.watch(ctx)
	return r, nil
}

type directRun struct {
	cmd  *exec.Cmd
	lim  Limits
	done chan struct{}

	mu      sync.Mutex // guards limit
	limit   reasons.Code
	outcome Outcome
}

func (r *directRun) watch(ctx context.Context) {
	waitErr := make(chan error, 1)
	go func() { waitErr <- r.cmd.Wait() }()
	wall := time.NewTimer(r.lim.WallClock)
	defer wall.Stop()
	cancelled := ctx.Done()
	var err error
loop:
	for {
		select {
		case err = <-waitErr:
			break loop
		case <-wall.C:
			r.mu.Lock()
			r.limit = LimitWallClock
			r.mu.Unlock()
			go r.Stop()
		case <-cancelled:
			cancelled = nil // once
			go r.Stop()
		}
	}
	// The group may outlive its leader: end it.
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	o := Outcome{Cgroup: CgroupNone}
	r.mu.Lock()
	o.Limit = r.limit
	r.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			o.Signal = int(ws.Signal())
			o.ExitCode = 128 + o.Signal
		} else {
			o.ExitCode = ws.ExitStatus()
		}
	default:
		o.ExitCode, o.Err = -1, err
	}
	if o.Limit != "" {
		o.Detail = reasons.Text(o.Limit)
	}
	r.outcome = o
	close(r.done)
}

// Stop sends TERM to the run's process group and KILL after the grace period.
func (r *directRun) Stop() {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(r.lim.Grace):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Wait implements Run.
func (r *directRun) Wait() Outcome {
	<-r.done
	return r.outcome
}
