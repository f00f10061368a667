package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/gate"
	"anet.dev/anet/pkg/sandbox/launch"
	"anet.dev/anet/pkg/sandbox/memfd"
	"anet.dev/anet/pkg/sandbox/runinit"
	"anet.dev/anet/pkg/sandbox/seccomp"
)

// run is one started sandboxed run. It embeds its watch, which gives it Wait, Stop, Kill
// and Settled.
type run struct {
	*launch.Watch
	l    *Backend
	plan *launch.Plan
	lim  sandbox.Limits
	gate *gate.Host // the probe folded into the run (StartProbed), or nil
	lay  Layout
	fds  fdTable // the child's descriptors past stdio, until exec has handed them over
	argv []string
	cmd  *exec.Cmd
	leaf *leaf
	// leafDone delivers the run's cgroups, made while the dirs are (both are a few file
	// system calls that wait on the kernel, not on each other); nil once received.
	leafDone chan leafMade
	statusR  *os.File // the launcher's end of bwrap's --json-status-fd until readStatus has it
	hold     *os.File // the launcher's end of init's --hold, until Start returns; nil without one
	// endBorn ends the thread that started a run born in its cgroups (startBorn); watch calls
	// it once, when the run is over. nil otherwise.
	endBorn func()
	// mntNS holds the run's mount namespace from confine until its outcome is out (finish);
	// nil when it could not be opened.
	mntNS  *os.File
	dirs   *launch.RunDirs // home, tmp, work; nil until made
	stderr *sandbox.Capped

	cgroup     sandbox.CgroupLimits // whether the cgroup limits are in force; set by start
	childPid   chan int             // init's host pid, from --json-status-fd
	statusDone chan struct{}        // closed when bwrap's status pipe reached EOF

	mu       sync.Mutex // guards the fields below
	exitCode int
	gotExit  bool
	pidfd    int   // init's pidfd once confined, else -1
	setupErr error // a failure after the process started (limits not read back)
	// scope is the run's systemd scope's cgroup dir once its limits were read back (the
	// systemd mechanism has no leaf of ours); scopeLimit the limit it ran into, read when
	// init's exit was reported, before systemd removes the scope; scopeWatch the counters
	// followed from the read-back on, for when systemd was quicker than that read.
	scope      string
	scopeLimit reasons.Code
	scopeWatch *scopeWatch
}

type leafMade struct {
	leaf *leaf
	err  error
}

// fdTable is the child's descriptors past stdio, as data: the i-th file added becomes fd
// 3+i in bwrap (through systemd-run's exec too), which is the number its flag names.
type fdTable struct{ files []*os.File }

// add appends fs and returns the child's fd number of the first.
func (t *fdTable) add(fs ...*os.File) int {
	n := 3 + len(t.files)
	t.files = append(t.files, fs...)
	return n
}

// close closes the launcher's copies (after exec, or when the start failed).
func (t *fdTable) close() {
	for _, f := range t.files {
		f.Close()
	}
	t.files = nil
}

// Start implements launch.Backend: it applies p (link-safe dirs, seccomp memfds, cgroup
// limits), then bwrap → init → agent, so every limit is in place before the agent, or
// anything it starts, exists: bwrap is born in the run's cgroups, on cgroup v1 through the
// launcher's starting thread (startBorn), on a delegated v2 subtree by clone3 into the
// leaf (CLONE_INTO_CGROUP), in a systemd scope by systemd-run, which moves itself in before
// it execs bwrap; there init still waits on its --hold fd until the scope's limits are read
// back. Init sets the rlimits itself before it starts the agent.
// The probe gate is the Launcher's (pkg/sandbox/launch), or the run's own (StartProbed).
func (l *Backend) Start(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio) (launch.Run, error) {
	return l.StartWall(ctx, p, stdio, Wall{})
}

// StartWall is Start for a program that needs the named differences of w in place of an
// agent (the vm backend's QEMU, V1). Like Start it does not look at the probe: the vm
// backend's own probe, which the Launcher gates on, includes this backend's.
func (l *Backend) StartWall(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio, w Wall) (launch.Run, error) {
	r, err := l.start(ctx, p, stdio, w, nil)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// start is StartWall; with g, init runs the probe's checks first and starts the agent only
// when g releases it (pkg/sandbox/gate). It applies the plan as one ordered list of named
// steps; the first that fails undoes what the earlier ones made, and its error names it.
func (l *Backend) start(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio, w Wall, g *gate.Host) (*run, error) {
	r := &run{l: l, plan: p, lim: p.Limits(), gate: g, pidfd: -1,
		childPid: make(chan int, 1), statusDone: make(chan struct{})}
	r.Watch = launch.NewWatch(r.lim, func() { r.signalInit(unix.SIGTERM) }, r.kill, r.overDisk)
	r.stderr = sandbox.NewTail(stdio.Stderr, 4096)
	defer r.closeHold() // unwritten, it ends an init still waiting without an agent
	for _, s := range []struct {
		name string
		do   func() error
	}{
		{"programs", func() error { return r.findPrograms(w) }},
		{"cgroups", r.makeLeaf},
		{"dirs", r.makeDirs},
		{"seccomp", r.addSeccomp},
		{"env", r.addEnv},
		{"status", r.addStatus},
		{"hold", r.addHold},
		{"gate", r.addGate},
		{"cgroups", r.awaitLeaf},
		{"args", r.render},
		{"exec", func() error { return r.exec(stdio) }},
	} {
		if err := s.do(); err != nil {
			r.undo()
			return nil, fmt.Errorf("start %s: %s: %w", p.ID(), s.name, err)
		}
	}
	r.confineAndRelease()
	l.cfg.Log.Info("run started", "id", p.ID(), "mode", sandbox.ModeSandbox, "limits", l.mech.Mode, "cgroup", r.cgroup, "argv0", p.Host().Prog)
	go r.watch(ctx)
	return r, nil
}

// findPrograms finds bwrap and the run's init, and starts the run's layout with them and
// the wall's named differences.
func (r *run) findPrograms(w Wall) error {
	bw, err := r.l.bwrapPath()
	if err != nil {
		return err
	}
	initBin, err := r.l.initPath()
	if err != nil {
		return err
	}
	r.argv = []string{bw}
	r.lay = Layout{EnvFD: -1, StatusFD: -1, HoldFD: -1, Hostname: r.l.cfg.Hostname, Init: initBin, Self: r.l.cfg.Self,
		Unsafe: r.l.unsafe, SystemDirs: launch.HostSystemDirs(), Wall: w, FileSize: r.lim.FileSize}
	return nil
}

// makeLeaf starts making the run's cgroups (cgroup v1 or v2), which awaitLeaf collects.
func (r *run) makeLeaf() error {
	r.leafDone = make(chan leafMade, 1)
	switch r.l.mech.Mode {
	case LimitsV1, LimitsV2:
		r.cgroup = sandbox.CgroupFull
		go func() {
			lf, err := r.l.mech.newLeaf(r.plan.ID(), r.lim)
			r.leafDone <- leafMade{lf, err}
		}()
	default:
		r.cgroup = sandbox.CgroupNone
		r.leafDone <- leafMade{}
	}
	return nil
}

// awaitLeaf collects the cgroups makeLeaf started; undo calls it too, so a leaf made while a
// later step failed is removed.
func (r *run) awaitLeaf() error {
	if r.leafDone == nil {
		return nil
	}
	m := <-r.leafDone
	r.leafDone, r.leaf = nil, m.leaf
	return m.err
}

// makeDirs creates the run's dirs (launch.MakeRunDirs) and puts them in the layout.
func (r *run) makeDirs() error {
	d, err := launch.MakeRunDirs(r.plan.Spec(), r.l.cfg.Log)
	r.dirs = d
	r.lay.Home, r.lay.Tmp, r.lay.Work = d.Home, d.Tmp, d.Work
	return err
}

// addSeccomp hands bwrap the sealed seccomp programs (S4).
func (r *run) addSeccomp() error {
	progs, err := r.l.cfg.Filters()
	if err != nil {
		return reasons.New(reasons.SeccompFailed, err.Error())
	}
	for _, p := range progs {
		f, err := seccomp.WriteMemfd(p)
		if err != nil {
			return reasons.New(reasons.SeccompFailed, err.Error())
		}
		r.lay.SeccompFDs = append(r.lay.SeccompFDs, r.fds.add(f))
	}
	return nil
}

// addEnv hands init the endpoint variables in a sealed memfd: they never appear in an argv.
func (r *run) addEnv() error {
	env := r.plan.Spec().Env
	if len(env) == 0 {
		return nil
	}
	f, err := memfd.Sealed("anet-env", []byte(strings.Join(env, "\x00")+"\x00"))
	if err != nil {
		return err
	}
	r.lay.EnvFD = r.fds.add(f)
	return nil
}

// addStatus opens the pipe of bwrap's --json-status-fd: init's pid, then its exit code.
func (r *run) addStatus() error {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return err
	}
	r.statusR = statusR
	r.lay.StatusFD = r.fds.add(statusW)
	return nil
}

// addHold gives init the --hold a run in a systemd scope waits on until the scope's limits
// are read back (confineAndRelease); a run born in cgroups the launcher made itself, with
// their limits read back before the start, needs none.
func (r *run) addHold() error {
	if r.l.mech.Mode != LimitsSystemd {
		return nil
	}
	holdChild, hold, err := os.Pipe()
	if err != nil {
		return err
	}
	r.hold = hold
	r.lay.HoldFD = r.fds.add(holdChild)
	return nil
}

// addGate hands init the gate's streams when the probe is folded into the run.
func (r *run) addGate() error {
	if r.gate == nil {
		return nil
	}
	files := r.gate.Files()
	ctl := r.fds.add(files...)
	r.lay.Gate = r.gate.Args(ctl, ctl+1)
	return nil
}

// render is bwrap's argv for the plan and layout, inside a systemd scope when that is the
// limits mechanism.
func (r *run) render() error {
	args, err := Args(r.plan, r.lay)
	if err != nil {
		return err
	}
	r.argv = append(r.argv, args...)
	if r.l.mech.Mode == LimitsSystemd {
		sr, err := exec.LookPath("systemd-run")
		if err != nil {
			return err
		}
		r.argv = SystemdScopeArgs(sr, r.plan.ID(), r.lim, r.argv)
	}
	return nil
}

// exec starts bwrap: born in the run's cgroups on v1 (startBorn) and v2 (bornIn), else
// plainly (systemd-run moves itself into the scope it made).
func (r *run) exec(stdio sandbox.Stdio) error {
	env := []string{}
	if r.l.mech.Mode == LimitsSystemd {
		env = append(env, r.l.mech.busEnv...) // systemd-run's; bwrap clears it for the run
	}
	r.cmd = &exec.Cmd{
		Path:       r.argv[0],
		Args:       r.argv,
		Env:        env,
		Stdin:      stdio.Stdin,
		Stdout:     stdio.Stdout,
		Stderr:     r.stderr,
		ExtraFiles: r.fds.files,
		SysProcAttr: &syscall.SysProcAttr{
			Pdeathsig: syscall.SIGKILL, // with bwrap --die-with-parent: runs end with us
			Setpgid:   true,            // terminal signals reach the launcher, which stops runs itself
		},
	}
	var err error
	switch {
	case r.leaf != nil && len(r.leaf.tasks) > 0:
		r.endBorn, err = startBorn(r.cmd, r.leaf.tasks, r.l.mech.tasks())
	case r.leaf != nil && r.leaf.fd != nil:
		err = bornIn(r.cmd, r.leaf.fd)
	default:
		err = r.cmd.Start()
	}
	if err != nil {
		r.cmd = nil
		return reasons.New(reasons.SandboxStartFailed, err.Error())
	}
	r.fds.close()
	go r.readStatus(r.statusR)
	r.statusR = nil
	return nil
}

// confineAndRelease is what follows bwrap's start: confine its child, read the systemd
// scope's limits back, then release init's hold. A failure here kills the run, whose
// outcome then carries it (setupErr): the process exists, so the run is returned.
func (r *run) confineAndRelease() {
	if err := r.confine(); err != nil {
		r.setupErr = err
		r.Watch.Kill()
	}
	if r.setupErr == nil && r.l.mech.Mode == LimitsSystemd {
		// Fail closed: limits that cannot be read back from the run's own cgroup are not
		// in force, and this run was promised them.
		if dir, err := systemdReadBack(r.cmd.Process.Pid, r.lim); err != nil {
			r.setupErr = err
			r.Watch.Kill()
		} else {
			r.cgroup = sandbox.CgroupFull
			w := watchScope(dir)
			r.mu.Lock()
			r.scope, r.scopeWatch = dir, w
			r.mu.Unlock()
		}
	}
	if r.setupErr == nil && r.hold != nil {
		_, _ = r.hold.Write([]byte{runinit.Release}) // init may now start the agent
	}
}

// undo removes what the steps before a failed one made; nothing of the run was started.
func (r *run) undo() {
	r.fds.close()
	if r.statusR != nil {
		r.statusR.Close()
	}
	_ = r.awaitLeaf()
	r.leaf.kill()
	r.leaf.remove()
	r.cleanupDirs()
}

func (r *run) closeHold() {
	if r.hold != nil {
		r.hold.Close()
	}
}

// confine pins the run's pid 1 with a pidfd, for every later signal: bwrap's child (pid 1 of
// the run: bwrap, then init) reports its pid. The run was born in its cgroups (startBorn,
// bornIn, systemd-run), so nothing is moved. A child that died meanwhile is not an error
// here: bwrap reports its own failure.
func (r *run) confine() error {
	var pid int
	select {
	case pid = <-r.childPid:
	case <-r.statusDone:
		return nil // bwrap failed before forking; finish reports its message
	case <-time.After(30 * time.Second):
		return fmt.Errorf("bwrap did not report its child within 30s")
	}
	gone := func(err error) bool { return errors.Is(err, syscall.ESRCH) }
	// Until its agent starts, pid is still the run's init: a pidfd pins it for every later
	// signal, which a recycled pid number could not guarantee.
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if gone(err) {
			return nil
		}
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	r.mu.Lock()
	r.pidfd = pidfd
	r.mu.Unlock()
	// Held until the outcome is out (finish): the run's pid 1 is the last member of its mount
	// namespace, and tearing that down (every mount of the run, then an expedited RCU grace
	// period) would otherwise sit between the agent's end and bwrap's. Nothing runs in it by
	// then. Without it (refused, gone) the teardown just stays where it was.
	if f, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil {
		r.mntNS = f
	}
	return nil
}

// bornIn starts cmd with its first process cloned straight into the cgroup v2 dir cg (clone3
// CLONE_INTO_CGROUP, S6): no instruction of it runs outside the run's limits. Nothing else
// differs from a plain start: bwrap's parent-death signal and --die-with-parent still end
// the run with the launcher.
func bornIn(cmd *exec.Cmd, cg *os.File) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(cg.Fd())
	return cmd.Start()
}

// startBorn starts cmd from a thread that has first joined the run's cgroup v1 leaves (join,
// their tasks files), so bwrap, init and the agent are born in them (S6): no process of the
// run ever runs outside its limits, and nothing is moved from outside, which takes the
// kernel's global threadgroup lock, whose first taker waits for an RCU grace period (5 to
// 15 ms here, on every launch's path); the kernel moves a task's own single thread without
// it. Right after the fork the thread joins back (the launcher's own cgroups, back), and it
// stays, idle, until end is called once the run is over: bwrap's parent-death signal is tied
// to the thread that forked it, not to the process. The thread never runs anything else: its
// goroutine stays locked to it and ends locked, which ends the thread, and the runtime starts
// no thread from a locked one (it asks its template thread). If joining back fails the thread
// ends at once, and bwrap with it.
func startBorn(cmd *exec.Cmd, join, back []string) (end func(), err error) {
	started := make(chan error, 1)
	over := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		err := joinThread(join)
		if err == nil {
			err = cmd.Start()
		}
		if berr := joinThread(back); berr != nil {
			if err == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				err = fmt.Errorf("%w (the run was started and has been killed)", berr)
			}
			started <- err
			return
		}
		started <- err
		if err == nil {
			<-over
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return func() { close(over) }, nil
}

// joinThread moves the calling thread, alone, into the cgroup of each tasks file.
func joinThread(tasks []string) error {
	for _, p := range tasks {
		if err := os.WriteFile(p, []byte("0"), 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", p, err)
		}
	}
	return nil
}

func (r *run) cleanupDirs() { r.dirs.Remove(r.l.cfg.Log, r.plan.ID()) }

// readStatus follows bwrap's --json-status-fd: the child (init) pid, then its exit code.
func (r *run) readStatus(f *os.File) {
	defer close(r.statusDone)
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		var m map[string]json.Number
		if err := dec.Decode(&m); err != nil {
			return
		}
		if v, ok := m["child-pid"]; ok {
			if n, err := v.Int64(); err == nil {
				r.childPid <- int(n)
			}
		}
		if v, ok := m["exit-code"]; ok {
			if n, err := v.Int64(); err == nil {
				r.mu.Lock()
				r.exitCode, r.gotExit = int(n), true
				scope := r.scope
				r.mu.Unlock()
				if hit := scopeHit(scope); hit != "" {
					r.mu.Lock()
					r.scopeLimit = hit
					r.mu.Unlock()
				}
			}
		}
	}
}

// watch runs the shared watch loop (wall clock, cancel, the disk limit), then collects the
// outcome.
func (r *run) watch(ctx context.Context) {
	err := r.Run(ctx, r.cmd.Wait)
	if r.endBorn != nil {
		r.endBorn()
	}
	// The exit code travels on the status pipe, which bwrap closes when it exits; read it
	// to the end before judging the outcome. Only bwrap holds the write end.
	select {
	case <-r.statusDone:
	case <-time.After(5 * time.Second):
	}
	r.finish(err)
}

// overDisk is the watch's poll: the disk limit over home, tmp and work together.
func (r *run) overDisk() reasons.Code {
	if n, _ := linksafe.DiskUsage(r.dirs.All...); n > r.lim.Disk {
		return sandbox.LimitDisk
	}
	return ""
}

// signalInit sends sig to the run's pid 1 through its pidfd (a no-op before confine and
// after finish). TERM is the polite stop: init forwards it to the agent.
func (r *run) signalInit(sig unix.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pidfd >= 0 {
		_ = unix.PidfdSendSignal(r.pidfd, sig, nil, 0)
	}
}

// kill ends the whole run: init (so the kernel kills its pid namespace), bwrap, the cgroups.
func (r *run) kill() {
	r.signalInit(unix.SIGKILL)
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
	}
	r.leaf.kill()
}

func (r *run) finish(waitErr error) {
	// Anything left (there should be nothing once pid 1 of the namespace is gone) is killed.
	r.leaf.kill()
	r.mu.Lock()
	sw := r.scopeWatch
	r.mu.Unlock()
	sw.Close() // the run is over: what it saw is final
	r.mu.Lock()
	o := sandbox.Outcome{Cgroup: r.cgroup}
	limit := r.Limit()
	o.Limit = limit
	if o.Limit == "" {
		o.Limit = r.leaf.hit()
	}
	if o.Limit == "" {
		// A run in a systemd scope: what was read at init's exit, or the scope now if a run
		// killed from outside left it standing.
		if o.Limit = r.scopeLimit; o.Limit == "" {
			o.Limit = scopeHit(r.scope)
		}
		if o.Limit == "" {
			o.Limit = r.scopeWatch.Hit()
		}
	}
	switch {
	case r.setupErr != nil:
		// bwrap may have died first, and the set-up step failed because it did: its own last
		// words name the cause (Ubuntu's restriction: userns_blocked) where they have one.
		code := reasons.SandboxStartFailed
		if msg := strings.TrimSpace(r.stderr.String()); msg != "" {
			code = startReason(msg)
		}
		o.ExitCode = -1
		o.Err = reasons.New(code, r.setupErr.Error())
	case r.gotExit:
		o.ExitCode, o.Signal = r.exitCode, launch.SignalOf(r.exitCode)
	case limit != "" || r.Killed():
		o.ExitCode, o.Signal = launch.Killed()
	default:
		msg := strings.TrimSpace(r.stderr.String())
		if msg == "" && waitErr != nil {
			msg = waitErr.Error()
		}
		o.ExitCode = -1
		o.Err = reasons.New(startReason(msg), sandbox.LastLine(msg))
	}
	if r.pidfd >= 0 {
		unix.Close(r.pidfd)
		r.pidfd = -1
	}
	r.mu.Unlock()
	if o.Limit != "" {
		o.Detail = reasons.Text(o.Limit)
	}
	r.l.cfg.Log.Info("run ended", "id", r.plan.ID(), "exit", o.ExitCode, "limit", o.Limit, "err", o.Err)
	// Every process of the run is gone and its limits are read: nothing of it can act any
	// more, so the outcome does not wait for the removal (rmdir on the host's file system
	// and in cgroupfs), which follows at once and ends in settled.
	r.Finish(o)
	if r.mntNS != nil {
		r.mntNS.Close() // the mount namespace is torn down now, off the answer's path
	}
	// Like their making, the cgroups' and the dirs' removal do not wait on each other.
	removed := make(chan struct{})
	go func() {
		r.leaf.remove()
		close(removed)
	}()
	r.cleanupDirs()
	<-removed
	r.Settle()
}
