package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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

// Child fd numbers: ExtraFiles[i] becomes fd 3+i in bwrap (through systemd-run's exec too).
const (
	fdSeccomp0 = 3
)

// run is one started sandboxed run.
type run struct {
	l    *Backend
	spec sandbox.Spec
	lim  sandbox.Limits
	cmd  *exec.Cmd
	leaf *leaf
	hold *os.File // the launcher's end of init's --hold, until Start returns; nil without one
	// endBorn ends the thread that started a run born in its cgroups (startBorn); watch calls
	// it once, when the run is over. nil otherwise.
	endBorn func()
	// mntNS holds the run's mount namespace from confine until its outcome is out (finish);
	// nil when it could not be opened.
	mntNS  *os.File
	dirs   *launch.RunDirs // home, tmp, work; nil until made
	stderr *launch.Tail
	w      *launch.Watch

	cgroup     sandbox.CgroupLimits // whether the cgroup limits are in force; set by start
	childPid   chan int             // init's host pid, from --json-status-fd
	statusDone chan struct{}        // closed when bwrap's status pipe reached EOF

	mu       sync.Mutex // guards the fields below
	exitCode int
	gotExit  bool
	pidfd    int   // init's pidfd once confined, else -1
	setupErr error // a failure after the process started (limits not read back)
	outcome  sandbox.Outcome
}

// Start implements launch.Backend: it applies spec (link-safe dirs, seccomp memfds, cgroup
// limits), then bwrap → init → agent, so every limit is in place before the agent, or
// anything it starts, exists: on cgroup v1 bwrap is born in the run's cgroups (startBorn);
// on v2 and in a systemd scope init waits on its --hold fd until confine has moved it in;
// init sets the rlimits itself before it starts the agent.
// The probe gate is the Launcher's (pkg/sandbox/launch), or the run's own (StartProbed).
func (l *Backend) Start(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (launch.Run, error) {
	return l.StartWall(ctx, spec, stdio, Wall{})
}

// StartWall is Start for a program that needs the named differences of w in place of an
// agent (the vm backend's QEMU, V1). Like Start it does not look at the probe: the vm
// backend's own probe, which the Launcher gates on, includes this backend's.
func (l *Backend) StartWall(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio, w Wall) (launch.Run, error) {
	r, err := l.start(ctx, spec, stdio, w, nil)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// start is StartWall; with g, init runs the probe's checks first and starts the agent only
// when g releases it (pkg/sandbox/gate).
func (l *Backend) start(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio, w Wall, g *gate.Host) (*run, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Mode != sandbox.ModeSandbox {
		return nil, fmt.Errorf("start %s: mode %q is not sandboxed", spec.ID, spec.Mode)
	}
	bw, err := l.bwrapPath()
	if err != nil {
		return nil, err
	}
	initBin, err := l.initPath()
	if err != nil {
		return nil, err
	}
	r := &run{l: l, spec: spec, lim: spec.Limits.WithDefaults(), pidfd: -1, childPid: make(chan int, 1), statusDone: make(chan struct{})}
	r.w = launch.NewWatch(r.lim, func() { r.signalInit(unix.SIGTERM) }, r.kill, r.overDisk)
	var files []*os.File
	closeFiles := func() {
		for _, f := range files {
			f.Close()
		}
	}
	// The run's cgroups are made while the dirs are: both are a few file system calls that
	// wait on the kernel, not on each other.
	leafDone := make(chan error, 1)
	var leafMade *leaf
	cgroup := sandbox.CgroupNone
	switch l.mech.Mode {
	case LimitsV1, LimitsV2:
		cgroup = sandbox.CgroupFull
		go func() {
			var err error
			leafMade, err = l.mech.newLeaf(spec.ID, r.lim)
			leafDone <- err
		}()
	default:
		leafDone <- nil
	}
	leafErr := func() error {
		if leafDone == nil {
			return nil
		}
		err := <-leafDone
		leafDone, r.leaf = nil, leafMade
		return err
	}
	fail := func(err error) (*run, error) {
		closeFiles()
		_ = leafErr()
		r.leaf.kill()
		r.leaf.remove()
		r.cleanupDirs()
		return nil, err
	}

	lay := Layout{EnvFD: -1, StatusFD: -1, HoldFD: -1, Hostname: l.cfg.Hostname, Init: initBin, Self: l.cfg.Self, Unsafe: l.unsafe, SystemDirs: launch.HostSystemDirs(), Wall: w}
	if err := r.makeDirs(&lay); err != nil {
		return fail(err)
	}
	tree, prog, err := launch.ResolveAgent(spec)
	if err != nil {
		return fail(fmt.Errorf("start %s: %w", spec.ID, err))
	}
	lay.AgentTree = tree
	if lay.RuntimeTree, lay.RuntimeBin, err = launch.ResolveRuntime(spec); err != nil {
		return fail(fmt.Errorf("start %s: %w", spec.ID, err))
	}
	spec.Argv = append([]string{prog}, spec.Argv[1:]...)
	if spec.Endpoint != "" {
		ep, err := filepath.EvalSymlinks(spec.Endpoint)
		if err != nil {
			return fail(fmt.Errorf("start %s: endpoint: %w", spec.ID, err))
		}
		if fi, err := os.Lstat(ep); err != nil || fi.Mode()&os.ModeSocket == 0 {
			return fail(fmt.Errorf("start %s: endpoint %s is not a socket", spec.ID, ep))
		}
		lay.Endpoint = ep
	}

	progs, err := l.cfg.Filters()
	if err != nil {
		return fail(reasons.New(reasons.SeccompFailed, err.Error()))
	}
	for _, p := range progs {
		f, err := seccomp.WriteMemfd(p)
		if err != nil {
			return fail(reasons.New(reasons.SeccompFailed, err.Error()))
		}
		lay.SeccompFDs = append(lay.SeccompFDs, fdSeccomp0+len(files))
		files = append(files, f)
	}
	if len(spec.Env) > 0 {
		f, err := memfd.Sealed("anet-env", []byte(strings.Join(spec.Env, "\x00")+"\x00"))
		if err != nil {
			return fail(fmt.Errorf("start %s: env: %w", spec.ID, err))
		}
		lay.EnvFD = fdSeccomp0 + len(files)
		files = append(files, f)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fail(fmt.Errorf("start %s: status pipe: %w", spec.ID, err))
	}
	lay.StatusFD = fdSeccomp0 + len(files)
	files = append(files, statusW)
	// A run whose cgroups are joined from outside (v2, a systemd scope) holds its agent until
	// they are; on v1 the run is born in them (startBorn) and needs no hold.
	if l.mech.Mode == LimitsV2 || l.mech.Mode == LimitsSystemd {
		holdChild, hold, err := os.Pipe()
		if err != nil {
			statusR.Close()
			return fail(fmt.Errorf("start %s: hold: %w", spec.ID, err))
		}
		r.hold = hold
		defer hold.Close() // unwritten, it ends an init still waiting without an agent
		lay.HoldFD = fdSeccomp0 + len(files)
		files = append(files, holdChild)
	}
	lay.FileSize = r.lim.FileSize
	if g != nil {
		ctl := fdSeccomp0 + len(files)
		lay.Gate = g.Args(ctl, ctl+1)
		files = append(files, g.Files()...)
	}
	if err := leafErr(); err != nil {
		statusR.Close()
		return fail(fmt.Errorf("start %s: %w", spec.ID, err))
	}

	args, err := Args(spec, lay)
	if err != nil {
		statusR.Close()
		return fail(err)
	}
	argv := append([]string{bw}, args...)
	if l.mech.Mode == LimitsSystemd {
		sr, err := exec.LookPath("systemd-run")
		if err != nil {
			statusR.Close()
			return fail(fmt.Errorf("start %s: %w", spec.ID, err))
		}
		argv = SystemdScopeArgs(sr, spec.ID, r.lim, argv)
	}

	r.stderr = launch.NewTail(stdio.Stderr, 4096)
	cmd := &exec.Cmd{
		Path:       argv[0],
		Args:       argv,
		Env:        []string{},
		Stdin:      stdio.Stdin,
		Stdout:     stdio.Stdout,
		Stderr:     r.stderr,
		ExtraFiles: files,
		SysProcAttr: &syscall.SysProcAttr{
			Pdeathsig: syscall.SIGKILL, // with bwrap --die-with-parent: runs end with us
			Setpgid:   true,            // terminal signals reach the launcher, which stops runs itself
		},
	}
	r.cmd = cmd
	var startErr error
	if r.leaf != nil && len(r.leaf.tasks) > 0 {
		r.endBorn, startErr = startBorn(cmd, r.leaf.tasks, l.mech.tasks())
	} else {
		startErr = cmd.Start()
	}
	if startErr != nil {
		statusR.Close()
		return fail(reasons.New(reasons.SandboxStartFailed, startErr.Error()))
	}
	closeFiles()
	go r.readStatus(statusR)
	if err := r.confine(); err != nil {
		r.setupErr = err
		r.w.Kill()
	}
	if r.setupErr == nil && l.mech.Mode == LimitsSystemd {
		// Fail closed: limits that cannot be read back from the run's own cgroup are not
		// in force, and this run was promised them.
		if err := systemdReadBack(cmd.Process.Pid, r.lim); err != nil {
			r.setupErr = err
			r.w.Kill()
		} else {
			cgroup = sandbox.CgroupFull
		}
	}
	if r.setupErr == nil && r.hold != nil {
		_, _ = r.hold.Write([]byte{runinit.Release}) // init may now start the agent
	}
	r.outcome.Cgroup, r.cgroup = cgroup, cgroup
	l.cfg.Log.Info("run started", "id", spec.ID, "mode", spec.Mode, "limits", l.mech.Mode, "cgroup", cgroup, "argv0", prog)

	go r.watch(ctx)
	return r, nil
}

// confine pins the run's pid 1 with a pidfd, for every later signal, and moves it into the
// run's cgroups when they are joined from outside (cgroup v2): bwrap's child (pid 1 of the
// run: bwrap, then init) reports its pid, and with all its threads it is moved before its
// hold is released, so the agent and everything it forks inherit them. On cgroup v1 the run
// was born in them (startBorn). Init sets the rlimits itself. A child that died meanwhile is
// not an error here: bwrap reports its own failure.
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
	if r.leaf == nil || len(r.leaf.tasks) > 0 {
		return nil
	}
	for _, p := range r.leaf.procs {
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0); err != nil && !gone(err) {
			return fmt.Errorf("join cgroup %s: %w", p, err)
		}
	}
	return nil
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

// makeDirs creates the run's dirs (launch.MakeRunDirs) and puts them in lay.
func (r *run) makeDirs(lay *Layout) error {
	d, err := launch.MakeRunDirs(r.spec, r.l.cfg.Log)
	r.dirs = d
	lay.Home, lay.Tmp, lay.Work = d.Home, d.Tmp, d.Work
	return err
}

func (r *run) cleanupDirs() { r.dirs.Remove(r.l.cfg.Log, r.spec.ID) }

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
				r.mu.Unlock()
			}
		}
	}
}

// watch runs the shared watch loop (wall clock, cancel, the disk limit), then collects the
// outcome.
func (r *run) watch(ctx context.Context) {
	err := r.w.Run(ctx, r.cmd.Wait)
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
	o := r.outcome
	limit := r.w.Limit()
	o.Limit = limit
	if o.Limit == "" {
		o.Limit = r.leaf.hit()
	}
	switch {
	case r.setupErr != nil:
		o.ExitCode = -1
		o.Err = reasons.New(reasons.SandboxStartFailed, r.setupErr.Error())
	case r.gotExit:
		o.ExitCode = r.exitCode
		if o.ExitCode > 128 && o.ExitCode < 128+65 {
			o.Signal = o.ExitCode - 128
		}
	case limit != "" || r.w.Killed():
		o.ExitCode, o.Signal = 128+int(syscall.SIGKILL), int(syscall.SIGKILL)
	default:
		msg := strings.TrimSpace(r.stderr.String())
		if msg == "" && waitErr != nil {
			msg = waitErr.Error()
		}
		o.ExitCode = -1
		o.Err = reasons.New(classifyStart(msg), launch.LastLine(msg))
	}
	if r.pidfd >= 0 {
		unix.Close(r.pidfd)
		r.pidfd = -1
	}
	r.mu.Unlock()
	if o.Limit != "" {
		o.Detail = reasons.Text(o.Limit)
	}
	r.outcome = o
	r.l.cfg.Log.Info("run ended", "id", r.spec.ID, "exit", o.ExitCode, "limit", o.Limit, "err", o.Err)
	// Every process of the run is gone and its limits are read: nothing of it can act any
	// more, so the outcome does not wait for the removal (rmdir on the host's file system
	// and in cgroupfs), which follows at once and ends in settled.
	r.w.Finish()
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
	r.w.Settle()
}

// Wait implements sandbox.Run: the outcome, once every process of the run is gone.
func (r *run) Wait() sandbox.Outcome {
	<-r.w.Done()
	return r.outcome
}

// Settled implements launch.Settler: closed once the run's dirs and cgroups are removed,
// right after Wait has the outcome.
func (r *run) Settled() <-chan struct{} { return r.w.Settled() }

// Stop implements sandbox.Run.
func (r *run) Stop() { r.w.Stop() }

// Kill implements launch.Run.
func (r *run) Kill() { r.w.Kill() }
