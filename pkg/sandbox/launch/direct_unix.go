//go:build unix

package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// startDirect runs a trusted turn unsandboxed (P4): as the operator's user, in its work dir
// <WorkRoot>/<WorkSub> (created link-safely), with the same wall clock as a sandboxed run.
// The agent gets its own process group, which is what the wall clock stops; a trusted agent
// that daemonises escapes that, as it could from any shell of the operator.
func startDirect(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (Run, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Mode != sandbox.ModeDirect {
		return nil, fmt.Errorf("start direct %s: mode %q", spec.ID, spec.Mode)
	}
	if spec.WorkRoot == "" {
		return nil, fmt.Errorf("start direct %s: work_root: required in direct mode", spec.ID)
	}
	work, f, err := linksafe.MkdirUnder(spec.WorkRoot, spec.WorkSub, 0o700)
	if err != nil {
		return nil, fmt.Errorf("start direct %s: %w", spec.ID, err)
	}
	f.Close()
	home, _ := os.UserHomeDir()
	env := append(sandbox.DirectEnv(home, os.TempDir()), spec.Env...)
	cmd := &exec.Cmd{
		Path: spec.Argv[0], Args: spec.Argv, Env: env, Dir: work,
		Stdin: stdio.Stdin, Stdout: stdio.Stdout, Stderr: stdio.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start direct %s: %w", spec.ID, err)
	}
	pgid := cmd.Process.Pid
	r := &directRun{cmd: cmd}
	r.w = NewWatch(spec.Limits,
		func() { _ = syscall.Kill(-pgid, syscall.SIGTERM) },
		func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) },
		nil)
	go r.watch(ctx)
	return r, nil
}

type directRun struct {
	cmd     *exec.Cmd
	w       *Watch
	outcome sandbox.Outcome // set before w.Finish
}

func (r *directRun) watch(ctx context.Context) {
	err := r.w.Run(ctx, r.cmd.Wait)
	// The group may outlive its leader: end it.
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	o := sandbox.Outcome{Cgroup: sandbox.CgroupNone, Limit: r.w.Limit()}
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
	r.w.Finish()
}

// Stop implements sandbox.Run: TERM to the run's process group, KILL after the grace period.
func (r *directRun) Stop() { r.w.Stop() }

// Kill implements Run.
func (r *directRun) Kill() { r.w.Kill() }

// Wait implements sandbox.Run.
func (r *directRun) Wait() sandbox.Outcome {
	<-r.w.Done()
	return r.outcome
}
