package vm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mdlayher/vsock"
	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
)

// Paths of the guest's files inside QEMU's wall (bwrap.Wall binds).
const (
	wallKernel    = sandbox.SandboxRunDir + "/vmlinux"
	wallInitramfs = sandbox.SandboxRunDir + "/initramfs"
	wallLink      = sandbox.SandboxRunDir + "/link.sock"
	wallAgentTree = sandbox.SandboxRunDir + "/agent"
)

// QEMU's own needs inside its wall, beyond the guest's RAM: TCG's translation cache (64 MiB,
// see Machine.TBSizeMiB) and QEMU's heap, devices and 9p buffers; KVM needs no cache.
const (
	qemuOverheadTCG = 320 << 20
	qemuOverheadKVM = 192 << 20
	// qemuTasks bounds QEMU's threads (vCPUs, RCU, the 9p worker pool, I/O threads).
	qemuTasks = 128
	// guestOverheadBase (and 1/32 of the limit) is guest RAM beyond the agent's memory limit, for what the guest kernel
	// keeps for itself (its image, the memory map: about 1.6% of RAM), the unpacked initramfs,
	// init and page cache. Measured: a 256 MiB guest has 156 MiB available. Less, and the
	// agent's cgroup limit would lie above what the guest can give: the guest would run out
	// before the cgroup, and stall reclaiming instead of stopping the agent.
	guestOverheadBase = 128 << 20
	// maxEndpointStreams bounds concurrent endpoint streams (anet-egress bounds connections
	// again; this keeps the relay's own goroutines and fds bounded).
	maxEndpointStreams = 64
)

// Timings is the boot-to-agent breakdown of one run (make bench reports it).
type Timings struct {
	// QEMU is QEMU's start until it connected the link (the wall, QEMU's own start, loading
	// kernel and initramfs); Kernel the guest kernel's boot until init ran; Modules and
	// Link init's module loading and its wait for the link's device; Shares the 9p mounts;
	// Setup all of init's work after receiving the run's config; Total is Start's start
	// until the agent started.
	QEMU, Kernel, Modules, Link, Shares, Setup, Total time.Duration
}

// run is one VM run: QEMU in its bwrap wall (inner), the link to the guest, and the watch
// that stops the agent (over the link first, then by ending QEMU's wall).
type run struct {
	*launch.Watch // Wait, Stop, Kill, Settled
	l             *Backend
	plan          *launch.Plan
	lim           sandbox.Limits
	began         time.Time

	// What the start's steps find and make, in their order.
	accel      Accel
	transport  Transport
	guest      *guestFiles
	qemu       string
	hostLn     net.Listener // the link's listener until the link owns it
	cid, vport uint32
	cfg        GuestConfig
	wall       bwrap.Wall
	qplan      *launch.Plan // QEMU's own run

	inner launch.Run
	vmDir string
	lock  *os.File
	ctl   *control
	link  HostLink
	conn  net.Conn
	out   sync.WaitGroup // stdout and stderr copies
	t     Timings

	console, qemuErr *sandbox.Capped

	innerDone chan sandbox.Outcome
	ctlDone   chan struct{} // closed when the control stream has ended

	mu       sync.Mutex // guards the fields below
	exit     *Event     // the guest's report of the agent's end
	guestErr string
}

// Start implements launch.Backend: a guest with the accelerator the last passing probe chose
// (the Launcher probes before every sandboxed start). It returns once the agent runs in the
// guest; a guest that does not get that far is sandbox_start_failed with QEMU's and the
// console's last words, and nothing of the agent ran.
func (l *Backend) Start(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio) (launch.Run, error) {
	a := l.Accel()
	if a == "" {
		return nil, reasons.New(reasons.VMNoAccel, "no probe has chosen an accelerator yet")
	}
	return l.startWith(ctx, p, stdio, a)
}

func (l *Backend) startWith(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio, accel Accel) (launch.Run, error) {
	lim := p.Limits()
	r := &run{l: l, plan: p, lim: lim, accel: accel, transport: transportFor(accel), began: time.Now(),
		innerDone: make(chan sandbox.Outcome, 1), ctlDone: make(chan struct{}),
		console: sandbox.NewTail(nil, 4096), qemuErr: sandbox.NewTail(nil, 4096)}
	// The wall clock counts from the agent's start: the watch runs once Start has seen it.
	r.Watch = launch.NewWatch(lim, r.askStop, r.kill, nil)
	// The run is applied as one ordered list of named steps; the first that fails undoes what
	// the earlier ones made (abort), and its error names it.
	for _, s := range []struct {
		name string
		do   func() error
	}{
		{"user", r.checkUser},
		{"guest files", func() error { return r.findGuest(ctx) }},
		{"vm dir", r.makeDir},
		{"link", r.listen},
		{"machine", func() error { return r.describe(stdio) }},
		{"qemu", func() error { return r.startQEMU(ctx) }},
		{"connect", func() error { return r.connect(ctx, r.hostLn, r.transport, r.cid, r.deadline(), r.began) }},
		{"handshake", func() error { return r.handshake(ctx, r.cfg, r.deadline(), stdio, p.Host().Endpoint) }},
	} {
		if err := s.do(); err != nil {
			r.abort()
			return nil, fmt.Errorf("start %s: %s: %w", p.ID(), s.name, err)
		}
	}
	r.hostLn = nil // the link owns it now (serial: closed at QEMU's connect)
	r.t.Total = time.Since(r.began)
	l.cfg.Log.Info("run started", "id", p.ID(), "isolation", "vm", "accel", accel, "transport", r.transport,
		"boot_ms", r.t.Total.Milliseconds(), "argv0", p.Host().Prog)
	go r.watch(ctx)
	return r, nil
}

// checkUser refuses root: QEMU's 9p server acts with the node's uid, which the agent then has
// in the guest; as root that would be a root agent.
func (r *run) checkUser() error {
	if os.Getuid() == 0 {
		return reasons.New(reasons.SandboxStartFailed, "the vm isolation runs only as an unprivileged node user, not as root")
	}
	return nil
}

// findGuest finds the guest's kernel and initramfs and QEMU, and refuses what the guest cannot
// be given yet.
func (r *run) findGuest(ctx context.Context) error {
	if r.plan.Spec().RuntimeTree != "" {
		// Fail closed: the guest has no share for a second tree yet, and an agent whose
		// interpreter is missing would fail in a way that reads like the agent's own.
		return fmt.Errorf("runtime_tree %s: an agent interpreter outside the system dirs is not supported by the vm isolation tier", r.plan.Spec().RuntimeTree)
	}
	var err error
	if r.guest, err = r.l.prepare(ctx); err != nil {
		return err
	}
	r.qemu, err = r.l.qemuPath()
	return err
}

// listen opens the host's end of the link: a unix socket QEMU connects (serial), or a vsock
// port of the run's own (vsock).
func (r *run) listen() error {
	var err error
	switch r.transport {
	case TransportSerial:
		// Through the dir's fd: <RunRoot>/<ID>.vm/link.sock may be longer than a socket path
		// may be (108 bytes); the bind mount into QEMU's wall takes the real path.
		if r.hostLn, err = net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/link.sock", r.lock.Fd())); err != nil {
			return fmt.Errorf("link socket: %w", err)
		}
	case TransportVsock:
		// A random CID (QEMU refuses one in use, and the run fails closed) and a port of the
		// run's own; the link accepts only that CID.
		r.cid = 3 + rand.Uint32N(1<<30)
		r.vport = 1024 + rand.Uint32N(1<<30)
		if r.hostLn, err = vsock.Listen(r.vport, nil); err != nil {
			return fmt.Errorf("vsock listen: %w", err)
		}
	}
	return nil
}

// describe is the run as QEMU, its wall and the guest see it: the machine, the named
// differences of QEMU's wall from an agent's, the guest's config, and QEMU's own plan.
func (r *run) describe(stdio sandbox.Stdio) error {
	spec, host, lim, accel := r.plan.Spec(), r.plan.Host(), r.lim, r.accel
	wall := bwrap.Wall{Binds: []bwrap.Bind{{Src: r.guest.kernel.Vmlinux(), Dst: wallKernel}, {Src: r.guest.initramfs, Dst: wallInitramfs}}}
	r.cfg = GuestConfig{
		Argv: r.plan.Argv(), Env: spec.Env, HomeFiles: spec.HomeFiles, Port: spec.Port,
		UID: os.Getuid(), GID: os.Getgid(), Hostname: r.l.cfg.Hostname,
		Tasks: lim.Tasks, Memory: lim.Memory, FileSize: lim.FileSize,
		TmpBytes: lim.Disk, Stdin: stdio.Stdin != nil,
	}
	guestRAM := guestRAM(lim.Memory)
	m := Machine{Accel: accel, MemoryMiB: guestRAM >> 20, CPUs: r.l.cfg.CPUs,
		Kernel: wallKernel, Initrd: wallInitramfs, Transport: r.transport, VsockCID: r.cid}
	if r.transport == TransportSerial {
		wall.Binds = append(wall.Binds, bwrap.Bind{Src: filepath.Join(r.vmDir, "link.sock"), Dst: wallLink})
		m.LinkSocket = wallLink
	} else {
		wall.Devices = append(wall.Devices, "/dev/vhost-vsock")
	}
	tsc := 0
	if accel == AccelKVM {
		wall.Devices = append(wall.Devices, "/dev/kvm")
	} else {
		tsc = hostTSCKHz()
	}
	m.Cmdline = KernelCmdline(tsc, r.transport, r.vport)
	for _, d := range launch.HostSystemDirs() {
		if d.Link != "" {
			r.cfg.Links = append(r.cfg.Links, GuestLinkDir{Path: d.Path, Target: d.Link})
			continue
		}
		tag := "sys_" + strings.TrimPrefix(d.Path, "/")
		m.Shares = append(m.Shares, Share{Tag: tag, Path: d.Path, ReadOnly: true})
		r.cfg.Shares = append(r.cfg.Shares, GuestShare{Tag: tag, Mount: d.Path, ReadOnly: true})
	}
	if tree := host.AgentTree; tree != "" {
		wall.Binds = append(wall.Binds, bwrap.Bind{Src: tree, Dst: wallAgentTree})
		m.Shares = append(m.Shares, Share{Tag: "agent", Path: wallAgentTree, ReadOnly: true})
		r.cfg.Shares = append(r.cfg.Shares, GuestShare{Tag: "agent", Mount: tree, ReadOnly: true})
	}
	m.Shares = append(m.Shares, Share{Tag: "work", Path: sandbox.SandboxWork})
	r.cfg.Shares = append(r.cfg.Shares, GuestShare{Tag: "work", Mount: sandbox.SandboxWork})
	args, err := QEMUArgs(m)
	if err != nil {
		return err
	}
	boot := r.l.bootTimeout(accel)
	overhead := int64(qemuOverheadTCG)
	if accel == AccelKVM {
		overhead = qemuOverheadKVM
	}
	qspec := sandbox.Spec{
		ID: spec.ID, Mode: sandbox.ModeSandbox, Argv: append([]string{r.qemu}, args...),
		WorkRoot: spec.WorkRoot, WorkSub: spec.WorkSub, RunRoot: spec.RunRoot, Hidden: spec.Hidden,
		Limits: sandbox.Limits{Memory: guestRAM + overhead, Tasks: qemuTasks, Disk: lim.Disk, FileSize: lim.FileSize,
			// A backstop only: the run's own wall clock is its watch's, from the agent's start.
			// The disk limit is this watch's poll of the work share, as for an agent's run.
			WallClock: boot + lim.WallClock + 2*lim.Grace + 30*time.Second, Grace: lim.Grace},
	}
	// QEMU's run is a run of its own: its spec is another's, checked once like every run's.
	if r.qplan, err = launch.Prepare(qspec); err != nil {
		return err
	}
	r.wall = wall
	return nil
}

// startQEMU starts QEMU in its bwrap wall; the wall's outcome is read as it comes.
func (r *run) startQEMU(ctx context.Context) error {
	var err error
	if r.inner, err = r.l.cfg.Wall.StartWall(ctx, r.qplan, sandbox.Stdio{Stdout: r.console, Stderr: r.qemuErr}, r.wall); err != nil {
		return err
	}
	go func() { r.innerDone <- r.inner.Wait() }()
	return nil
}

// deadline is when the guest must have started the agent.
func (r *run) deadline() time.Time { return r.began.Add(r.l.bootTimeout(r.accel)) }

// guestRAM is the guest's RAM for an agent limited to memory: the limit, which the agent's
// cgroup in the guest enforces, plus the guest's own overhead, rounded up to a MiB.
func guestRAM(memory int64) int64 {
	return (memory + guestOverheadBase + memory/32 + (1 << 20) - 1) &^ (1<<20 - 1)
}

func (l *Backend) bootTimeout(a Accel) time.Duration {
	if l.cfg.BootTimeout > 0 {
		return l.cfg.BootTimeout
	}
	if a == AccelKVM {
		return 15 * time.Second
	}
	return 90 * time.Second
}

// makeDir creates <RunRoot>/<ID>.vm (the link socket's dir), locked like a run dir so a
// killed launcher's is swept.
func (r *run) makeDir() error {
	root, rootF, err := linksafe.MkdirUnder(r.plan.Spec().RunRoot, "", 0o700)
	if err != nil {
		return fmt.Errorf("run root: %w", err)
	}
	defer rootF.Close()
	name := r.plan.ID() + ".vm"
	if err := unix.Mkdirat(int(rootF.Fd()), name, 0o700); err != nil {
		return err
	}
	r.vmDir = filepath.Join(root, name)
	if r.lock, err = linksafe.LockRunDir(r.vmDir); err != nil {
		return err
	}
	return nil
}

// watch is the run's launch.Watch (the wall clock from the agent's start, the caller's
// cancel, terminate over the link, grace, kill) until QEMU's wall has ended; then it collects
// the outcome.
func (r *run) watch(ctx context.Context) {
	var inner sandbox.Outcome
	_ = r.Run(ctx, func() error {
		inner = <-r.innerDone
		return nil
	})
	// Output streams end when the guest's pipes do; give them a moment after QEMU's end.
	outDone := make(chan struct{})
	go func() { r.out.Wait(); close(outDone) }()
	select {
	case <-outDone:
	case <-time.After(5 * time.Second):
	}
	// The control stream ends with the link; a late exit event (QEMU ended just after the
	// guest sent it) is read before that.
	r.closeLink()
	select {
	case <-r.ctlDone:
	case <-time.After(5 * time.Second):
	}
	r.finish(inner)
}

// readEvents follows the guest's control stream after the agent's start. On the agent's exit
// the host closes the link, and the guest, which has relayed all of the agent's output
// before it reports, powers the VM off.
func (r *run) readEvents() {
	defer close(r.ctlDone)
	for {
		var ev Event
		if err := r.ctl.recv(&ev); err != nil {
			return
		}
		r.mu.Lock()
		switch ev.Event {
		case "exit":
			r.exit = &ev
		case "error":
			r.guestErr = ev.Detail
		}
		r.mu.Unlock()
		if ev.Event == "exit" {
			r.closeLink()
		}
	}
}

func (r *run) finish(inner sandbox.Outcome) {
	o := sandbox.Outcome{Cgroup: sandbox.CgroupFull, Limit: r.Limit()}
	r.mu.Lock()
	exit, guestErr := r.exit, r.guestErr
	r.mu.Unlock()
	switch {
	case exit != nil:
		o.ExitCode, o.Signal = exit.ExitCode, exit.Signal
		// The guest reports only the limits its cgroup has; anything else is not believed.
		if o.Limit == "" && (exit.Limit == sandbox.LimitMemory || exit.Limit == sandbox.LimitTasks) {
			o.Limit = exit.Limit
		}
	case o.Limit != "" || r.Killed():
		o.ExitCode, o.Signal = launch.Killed()
	case inner.Limit != "":
		// The wall's own limits (disk growth of the work share, QEMU's memory).
		o.Limit = inner.Limit
		o.ExitCode, o.Signal = launch.Killed()
	default:
		msg := "the VM ended without the agent's status"
		if guestErr != "" {
			msg += ": " + guestErr
		} else if c := sandbox.LastLine(r.console.String()); c != "" {
			msg += "; console: " + c
		}
		o.ExitCode = -1
		o.Err = reasons.New(reasons.SandboxStartFailed, msg)
	}
	if o.Limit == "" && inner.Limit != "" {
		o.Limit = inner.Limit
	}
	if o.Limit != "" {
		o.Detail = reasons.Text(o.Limit)
	}
	r.cleanup()
	r.l.cfg.Log.Info("run ended", "id", r.plan.ID(), "isolation", "vm", "exit", o.ExitCode, "limit", o.Limit, "err", o.Err)
	r.Finish(o)
	// The vm dir is removed above, before the outcome (one dir beside a boot of seconds);
	// QEMU's wall removes its own dirs and cgroups after its outcome.
	launch.WaitSettled(r.inner)
	r.Settle()
}

func (r *run) closeLink() {
	if r.link != nil {
		r.link.Close()
	}
	if r.conn != nil {
		r.conn.Close()
	}
}

func (r *run) cleanup() {
	if r.vmDir != "" {
		_ = linksafe.RemovePath(r.vmDir)
	}
	if r.lock != nil {
		r.lock.Close()
	}
}

// abort undoes a start that failed.
func (r *run) abort() {
	if r.hostLn != nil {
		r.hostLn.Close()
	}
	r.kill()
	if r.inner != nil {
		launch.WaitSettled(r.inner)
	}
	r.closeLink()
	r.cleanup()
}

// askStop is the watch's polite stop: the guest's init TERMs the agent. The watch kills
// QEMU's wall when the grace period passes first.
func (r *run) askStop() {
	if r.ctl != nil {
		_ = r.ctl.send(HostOp{Op: "stop"})
	}
}

// kill ends QEMU's wall now, and with it the guest.
func (r *run) kill() {
	r.closeLink()
	if r.inner != nil {
		r.inner.Kill()
	}
}

// Timings returns the run's boot breakdown.
func (r *run) Timings() Timings { return r.t }
