package seatbelt

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/loopback"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// run is one sandboxed run: its dirs and parameters from prepare, its process once started.
type run struct {
	*launch.Watch // Wait, Stop, Kill
	b             *Backend
	spec          sandbox.Spec
	lim           sandbox.Limits
	params        Params
	env           []string
	hidden        []string        // the spec's hidden paths that exist, resolved
	prog          string          // the agent's resolved program
	dirs          *launch.RunDirs // home, tmp, work; nil until made
	door          *loopback.Pair  // the closed door on the endpoint port of a run without endpoint
	cmd           *exec.Cmd
	stderr        *sandbox.Capped
	procs         *tracker
}

// Start implements launch.Backend: before anything of the run starts, the self-check runs in
// the run's own profile, with its own parameters (M1); a failed item is selfcheck_failed and
// nothing starts. Then the limits wrapper starts sandbox-exec and the agent under it.
func (b *Backend) Start(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio) (launch.Run, error) {
	return b.start(ctx, p, stdio, true)
}

func (b *Backend) start(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio, selfCheckFirst bool) (launch.Run, error) {
	spec := p.Spec()
	r, err := b.prepare(p)
	if err != nil {
		return nil, err
	}
	if selfCheckFirst {
		// The spec says when its program is an agent (Spec.Agent); the agent's check runs
		// the resolved program, as the run will.
		agent := ""
		if spec.Agent != "" {
			agent = r.prog
		}
		checks, err := selfCheck(ctx, b.checkInput(r, r.params.EndpointPort, agent), b.raw(r))
		if err == nil && !check.AllOK(checks) {
			err = reasons.New(reasons.SelfCheckFailed, firstFailure(checks))
		}
		if err != nil {
			r.cleanupDirs()
			if sandbox.CodeOf(err) == "" {
				err = reasons.New(reasons.SelfCheckFailed, err.Error())
			}
			b.log.Warn("self-check before the run failed; the run does not start", "id", spec.ID, "err", err)
			return nil, fmt.Errorf("start %s: %w", spec.ID, err)
		}
	}
	procs, err := userProcesses()
	if err != nil {
		r.cleanupDirs()
		return nil, fmt.Errorf("start %s: %w", spec.ID, reasons.New(reasons.SandboxStartFailed, err.Error()))
	}
	argv, err := Argv(r.params, append([]string{r.prog}, spec.Argv[1:]...))
	if err != nil {
		r.cleanupDirs()
		return nil, fmt.Errorf("start %s: %w", spec.ID, reasons.New(reasons.SandboxStartFailed, err.Error()))
	}
	lim := runLimits(r.lim, procs)
	wrapped := append(append([]string{b.self, WrapCommand}, lim.Args()...), "--")
	wrapped = append(wrapped, argv...)
	r.stderr = sandbox.NewTail(stdio.Stderr, 4096)
	r.cmd = &exec.Cmd{Path: b.self, Args: wrapped, Env: r.env, Dir: r.params.Work,
		Stdin: stdio.Stdin, Stdout: stdio.Stdout, Stderr: r.stderr,
		// Its own group: terminal signals reach the launcher, which stops runs itself.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := r.cmd.Start(); err != nil {
		r.cleanupDirs()
		return nil, fmt.Errorf("start %s: %w", spec.ID, reasons.New(reasons.SandboxStartFailed, err.Error()))
	}
	r.procs = newTracker(r.cmd.Process.Pid)
	r.Watch = launch.NewWatch(r.lim, func() { _ = syscall.Kill(r.cmd.Process.Pid, syscall.SIGTERM) }, r.kill, r.poll)
	b.log.Info("run started", "id", spec.ID, "backend", Name, "limits", "rlimits", "argv0", r.prog)
	go r.watch(ctx)
	return r, nil
}

// prepare makes the run's dirs (link-safe, fresh) and parameters from its plan, with what
// the profile adds to the plan's rules: the endpoint on the host loopback, no second tree.
func (b *Backend) prepare(p *launch.Plan) (*run, error) {
	spec := p.Spec()
	if spec.Endpoint != "" {
		return nil, fmt.Errorf("start %s: endpoint: a Seatbelt run reaches its endpoint on the host loopback (endpoint_addr), not through a socket", spec.ID)
	}
	if _, err := sandboxExec(); err != nil {
		return nil, err
	}
	r := &run{b: b, spec: spec, lim: spec.Limits.WithDefaults()}
	for _, h := range spec.Hidden {
		if p, err := filepath.EvalSymlinks(h); err == nil {
			r.hidden = append(r.hidden, p)
		}
	}
	tree, prog, err := b.agentTree(spec, p.Host(), r.hidden)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.ID, err)
	}
	if spec.RuntimeTree != "" {
		// Fail closed: the profile grants no second tree yet.
		return nil, fmt.Errorf("start %s: runtime_tree %s: an agent interpreter outside the system dirs is not supported by the seatbelt backend", spec.ID, spec.RuntimeTree)
	}
	r.prog = prog
	if err := r.makeDirs(); err != nil {
		r.cleanupDirs()
		return nil, fmt.Errorf("start %s: dirs: %w", spec.ID, err)
	}
	port := spec.Port
	if spec.EndpointAddr == "" {
		// No endpoint: the profile still names one port, so the run gets one that answers
		// nothing, held on both loopbacks for its lifetime so no other program can take it.
		if r.door, err = loopback.Listen(); err != nil {
			r.cleanupDirs()
			return nil, fmt.Errorf("start %s: %w", spec.ID, err)
		}
		go launch.DrainListener(r.door.Listener)
		port = r.door.Port
	}
	// The developer dir is looked up for every run: `xcode-select -s` may have changed it.
	r.params = Params{Home: r.dirs.Home, Tmp: r.dirs.Tmp, Work: r.dirs.Work, AgentTree: tree,
		DeveloperDir: activeDeveloperDir(b.home), Self: b.self, EndpointPort: port, OperatorHome: b.home}
	if err := r.params.Validate(); err != nil {
		r.cleanupDirs()
		return nil, fmt.Errorf("start %s: %w", spec.ID, err)
	}
	for _, d := range r.dirs.All {
		for _, h := range r.hidden {
			if sandbox.Within(d, h) || sandbox.Within(h, d) {
				r.cleanupDirs()
				return nil, fmt.Errorf("start %s: run dir %s overlaps %s, which must never be visible in a run", spec.ID, d, h)
			}
		}
	}
	r.env = RunEnv(r.params.Home, r.params.Tmp, spec.Env)
	return r, nil
}

// agentTree is the program and the tree the run may read and run it from, from the plan's
// resolved host paths: the profile opens the program trees already, and names a tree of its
// own for any other program.
func (b *Backend) agentTree(spec sandbox.Spec, h launch.HostPaths, hidden []string) (tree, prog string, err error) {
	if h.Prog == sandbox.SandboxSelf {
		return filepath.Dir(b.self), b.self, nil
	}
	prog = h.Prog
	named := spec.AgentTree != ""
	if tree, err = agentTreeOf(prog, named, h.AgentTree); err != nil {
		return "", "", err
	}
	if !named && tree == neutralTree {
		// The profile opens the program's tree already; the parameter names one it opens anyway.
		return tree, prog, nil
	}
	if err := sandbox.CheckAgentTree(tree, hidden, b.home); err != nil {
		return "", "", err
	}
	return tree, prog, nil
}

// makeDirs creates the run's dirs (launch.MakeRunDirs).
func (r *run) makeDirs() (err error) {
	r.dirs, err = launch.MakeRunDirs(r.spec, r.b.log)
	return err
}

func (r *run) cleanupDirs() {
	if r.door != nil {
		r.door.Close()
	}
	r.dirs.Remove(r.b.log, r.spec.ID)
}

// poll is the watch's once-a-second look: the disk limit over home, tmp and work, and the
// run's processes (recorded for the kill; too many is the task limit).
func (r *run) poll() reasons.Code {
	if n, _ := linksafe.DiskUsage(r.dirs.All...); n > r.lim.Disk {
		return sandbox.LimitDisk
	}
	if n, err := r.procs.scan(); err == nil && int64(n) > r.lim.Tasks {
		return sandbox.LimitTasks
	}
	return ""
}

// kill ends every process of the run: the wrapper's group, the sandboxed group, and every
// process the tracker saw in the run, wherever it went since.
func (r *run) kill() {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.procs.killAll()
}

func (r *run) watch(ctx context.Context) {
	err := r.Run(ctx, r.cmd.Wait)
	r.procs.killAll()
	o := sandbox.Outcome{Cgroup: sandbox.CgroupNone, Limit: r.Limit(), ExitCode: exitStatus(err)}
	o.Signal = launch.SignalOf(o.ExitCode)
	tail := strings.TrimSpace(r.stderr.String())
	switch {
	case o.Limit != "" || r.Killed():
	case o.ExitCode == 125 && strings.Contains(tail, "anet-sandboxd "+WrapCommand+":"),
		o.ExitCode != 0 && strings.Contains(tail, "sandbox-exec:"):
		// The wrapper or sandbox-exec failed: the agent never ran.
		o.ExitCode, o.Signal, o.Err = -1, 0, reasons.New(reasons.SandboxStartFailed, clip(sandbox.LastLine(tail)))
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && o.Err == nil {
		o.ExitCode, o.Err = -1, reasons.New(reasons.SandboxStartFailed, err.Error())
	}
	if o.Limit != "" {
		o.Detail = reasons.Text(o.Limit)
	}
	r.cleanupDirs()
	r.b.log.Info("run ended", "id", r.spec.ID, "exit", o.ExitCode, "limit", o.Limit, "err", o.Err)
	r.Finish(o)
	r.Settle() // the run's dirs are removed above, before its outcome
}
