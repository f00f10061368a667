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
func startDirect(ctx context.Context, p *Plan, stdio sandbox.Stdio) (Run, error) {
	spec := p.Spec()
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
	r.Watch = NewWatch(spec.Limits,
		func() { _ = syscall.Kill(-pgid, syscall.SIGTERM) },
		func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) },
		nil)
	go r.watch(ctx)
	return r, nil
}

// directRun is a direct run: its process group, and the watch it embeds (Wait, Stop, Kill).
type directRun struct {
	*Watch
	cmd *exec.Cmd
}

func (r *directRun) watch(ctx context.Context) {
	err := r.Run(ctx, r.cmd.Wait)
	// The group may outlive its leader: end it.
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	o := sandbox.Outcome{Cgroup: sandbox.CgroupNone, Limit: r.Limit()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		o.ExitCode = StatusOf(ws)
		if ws.Signaled() {
			o.Signal = int(ws.Signal())
		}
	default:
		o.ExitCode, o.Err = -1, err
	}
	if o.Limit != "" {
		o.Detail = reasons.Text(o.Limit)
	}
	r.Finish(o)
	r.Settle() // a direct run makes nothing on the host to remove
}

// StatusOf is how ws says a process ended, by the shell's convention: its exit status, or
// SignalExit of the signal that ended it.
func StatusOf(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return SignalExit(ws.Signal())
	}
	return ws.ExitStatus()
}
