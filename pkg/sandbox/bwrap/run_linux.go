package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	l      *Backend
	spec   sandbox.Spec
	lim    sandbox.Limits
	cmd    *exec.Cmd
	leaf   *leaf
	hold   *os.File        // the launcher's end of init's --hold, until Start returns
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
// limits), then bwrap → init → agent. init waits on its --hold fd until confine has applied
// the rlimits and cgroups, so every limit is in place before the agent, or anything it
// starts, exists; bwrap's set-up and init's start (our code) run meanwhile, so they overlap
// the move into the cgroups, which waits for an RCU grace period of the kernel.
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
	hold, holdChild, err := holdPair()
	if err != nil {
		statusR.Close()
		return fail(fmt.Errorf("start %s: hold: %w", spec.ID, err))
	}
	r.hold = hold
	defer hold.Close() // unwritten, it ends an init still waiting without an agent
	lay.HoldFD = fdSeccomp0 + len(files)
	files = append(files, holdChild)
	if g != nil {
		ctl := fdSeccomp0 + len(files)
		lay.Gate = g.Args(ctl, ctl+1)
		files = append(files, g.Files()...)
	}
	if err := leafErr(); err != nil {
		statusR.Close()
		return fail(fmt.Errorf("start %s: %w", spec.ID, err))
	}
	if r.leaf != nil {
		for _, p := range r.leaf.tasks {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				statusR.Close()
				return fail(fmt.Errorf("start %s: open cgroup %s: %w", spec.ID, p, err))
			}
			lay.JoinFDs = append(lay.JoinFDs, fdSeccomp0+len(files))
			files = append(files, f)
		}
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
	if err := cmd.Start(); err != nil {
		statusR.Close()
		return fail(reasons.New(reasons.SandboxStartFailed, err.Error()))
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
	if r.setupErr == nil {
		_, _ = hold.Write([]byte{runinit.Release}) // init may now start the agent
	}
	r.outcome.Cgroup, r.cgroup = cgroup, cgroup
	l.cfg.Log.Info("run started", "id", spec.ID, "mode", spec.Mode, "limits", l.mech.Mode, "cgroup", cgroup, "argv0", prog)

	go r.watch(ctx)
	return r, nil
}

// confine applies what must be in place before the agent starts. bwrap's child (pid 1 of the
// run: bwrap, then init) reports its pid; from outside we set its RLIMIT_CORE (0) and
// RLIMIT_FSIZE and move it, with all its threads, into the run's cgroups, so the agent and
// everything it forks inherit them: init forks nothing before its hold is released. A child
// that died meanwhile is not an error here: bwrap reports its own failure.
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
	// The child is blocked, so pid is still it: a pidfd pins it for every later signal, which
	// a recycled pid number could not guarantee.
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
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, &unix.Rlimit{}, nil); err != nil && !gone(err) {
		return fmt.Errorf("set RLIMIT_CORE of %d: %w", pid, err)
	}
	fs := uint64(r.lim.FileSize)
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: fs, Max: fs}, nil); err != nil && !gone(err) {
		return fmt.Errorf("set RLIMIT_FSIZE of %d: %w", pid, err)
	}
	if r.leaf == nil {
		return nil
	}
	if len(r.leaf.tasks) > 0 {
		return r.joined()
	}
	for _, p := range r.leaf.procs {
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0); err != nil && !gone(err) {
			return fmt.Errorf("join cgroup %s: %w", p, err)
		}
	}
	return nil
}

// joined waits for init's word that it is in the run's cgroup v1 leaves (runinit's Join):
// init moves itself, which the kernel does without the global lock a move from outside takes.
func (r *run) joined() error {
	if err := r.hold.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	var b [1]byte
	if _, err := io.ReadFull(r.hold, b[:]); err != nil {
		return fmt.Errorf("%w: %v", errNotJoined, err)
	}
	if b[0] != runinit.Joined {
		return fmt.Errorf("%w: init said %d", errNotJoined, b[0])
	}
	return nil
}

// errNotJoined: no agent started, and bwrap's or init's own message, when there is one, says
// why better than this.
var errNotJoined = errors.New("init did not join the run's cgroups")

// holdPair is init's --hold: a stream socket pair, since init also answers on it (Joined).
// The launcher's end is non-blocking, so reading it can time out.
func holdPair() (local, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "anet-hold"), os.NewFile(uintptr(fds[1]), "anet-hold-init"), nil
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
		code, msg := reasons.SandboxStartFailed, r.setupErr.Error()
		if m := strings.TrimSpace(r.stderr.String()); m != "" && errors.Is(r.setupErr, errNotJoined) {
			code, msg = classifyStart(m), launch.LastLine(m)
		}
		o.Err = reasons.New(code, msg)
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
	// Like their making, the cgroups' and the dirs' removal do not wait on each other.
	removed := make(chan struct{})
	go func() {
		r.leaf.remove()
		close(removed)
	}()
	r.cleanupDirs()
	<-removed
	if o.Limit != "" {
		o.Detail = reasons.Text(o.Limit)
	}
	r.outcome = o
	r.l.cfg.Log.Info("run ended", "id", r.spec.ID, "exit", o.ExitCode, "limit", o.Limit, "err", o.Err)
	r.w.Finish()
}

// Wait implements sandbox.Run.
func (r *run) Wait() sandbox.Outcome {
	<-r.w.Done()
	return r.outcome
}

// Stop implements sandbox.Run.
func (r *run) Stop() { r.w.Stop() }

// Kill implements launch.Run.
func (r *run) Kill() { r.w.Kill() }
