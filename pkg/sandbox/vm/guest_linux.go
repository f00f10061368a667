package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mdlayher/vsock"
	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
	"anet.dev/anet/pkg/sandbox/runinit"
	"anet.dev/anet/pkg/sandbox/vm/guestimage"
)

// AgentCommand is the subcommand the guest init re-executes itself as, in the agent's new
// namespaces, to drop to the agent's wall and then act as pid 1 of the agent's pid namespace.
const AgentCommand = "vm-agent"

// guestCgroup is the agent's cgroup in the guest (memory and tasks limits).
const guestCgroup = "/sys/fs/cgroup/agent"

// Guest is pid 1 of the VM (`anet-sandboxd vm-guest --link serial|vsock`). It returns only
// on a failure before the link is up; otherwise it powers the VM off. Everything it does
// with the agent's input is relaying: the endpoint on the host enforces every rule.
func Guest(transport Transport, vsockPort uint32, stderr io.Writer) error {
	boot := uptimeMS()
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "anet guest: "+format+"\n", a...) }
	defer powerOff()
	if err := guestMounts(); err != nil {
		logf("%v", err)
		return err
	}
	t0 := time.Now()
	if err := loadModules(); err != nil {
		logf("%v", err)
		return err
	}
	modules := time.Since(t0)
	t0 = time.Now()
	link, cc, err := openGuestLink(transport, vsockPort)
	if err != nil {
		logf("%v", err)
		return err
	}
	defer link.Close()
	ctl := newControl(cc)
	if err := ctl.send(Hello{KernelMS: boot, ModulesMS: modules.Milliseconds(), LinkMS: time.Since(t0).Milliseconds()}); err != nil {
		logf("control: %v", err)
		return err
	}
	var cfg GuestConfig
	if err := ctl.recv(&cfg); err != nil {
		logf("control: %v", err)
		return err
	}
	ev := runGuest(link, ctl, cfg, logf)
	_ = ctl.send(ev)
	// The host closes the link once it has the exit event: everything the agent wrote was
	// relayed before it (runGuest drains stdout and stderr first).
	done := make(chan struct{})
	go func() {
		var op HostOp
		for ctl.recv(&op) == nil {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return nil
}

// runGuest sets up the agent's root and runs it; the event says how it ended.
func runGuest(link GuestLink, ctl *control, cfg GuestConfig, logf func(string, ...any)) Event {
	fail := func(err error) Event {
		logf("%v", err)
		return Event{Event: "error", Detail: reasons.Clip(err.Error(), 2000)}
	}
	if err := cfg.Validate(); err != nil {
		return fail(fmt.Errorf("config: %w", err))
	}
	t0 := time.Now()
	shares, err := buildRoot(cfg)
	if err != nil {
		return fail(err)
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return fail(fmt.Errorf("hostname: %w", err))
	}
	if err := loopbackUp(); err != nil {
		return fail(err)
	}
	if cfg.Port != 0 {
		// The bridge every backend's runs have, with the link as its upstream.
		ln, err := runinit.ListenLoopback(cfg.Port)
		if err != nil {
			return fail(err)
		}
		defer ln.Close()
		go runinit.Relay(ln, linkUpstream{link}, logf)
	}
	cg, err := agentCgroup(cfg)
	if err != nil {
		return fail(err)
	}
	defer cg.Close()

	stdio, closeAfterStart, drains, err := guestStdio(link, cfg)
	if err != nil {
		return fail(err)
	}
	cmd := agentCommand(cfg, stdio, cg)
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("start the agent's init: %w", err))
	}
	for _, f := range closeAfterStart {
		f.Close()
	}
	_ = ctl.send(Event{Event: "started", SharesMS: shares.Milliseconds(), SetupMS: time.Since(t0).Milliseconds()})
	go func() {
		var op HostOp
		for ctl.recv(&op) == nil {
			if op.Op == "stop" {
				_ = cmd.Process.Signal(syscall.SIGTERM)
			}
		}
	}()
	err = cmd.Wait()
	drainDone := make(chan struct{})
	go func() { drains.Wait(); close(drainDone) }()
	select {
	case <-drainDone:
	case <-time.After(10 * time.Second):
		logf("agent output still open 10s after it exited (a background process holds it)")
	}
	ev := Event{Event: "exit"}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		// The agent's init reports a signal's end as its status (128+n), as a signal
		// ending the process itself does.
		ev.ExitCode = launch.StatusOf(ee.Sys().(syscall.WaitStatus))
		ev.Signal = launch.SignalOf(ev.ExitCode)
	default:
		return fail(err)
	}
	ev.Limit = cgroupLimitHit()
	return ev
}

// guestStdio opens the agent's standard streams over the link (stdin only when the host has
// one), each through a pipe whose copy drains tracks. closeAfterStart are the guest's ends,
// closed once the agent's init holds them.
func guestStdio(link GuestLink, cfg GuestConfig) (stdio, closeAfterStart []*os.File, drains *sync.WaitGroup, err error) {
	drains = &sync.WaitGroup{}
	stdio = make([]*os.File, 3)
	for i, k := range []Kind{KindStdin, KindStdout, KindStderr} {
		if k == KindStdin && !cfg.Stdin {
			f, err := os.Open(os.DevNull)
			if err != nil {
				return nil, nil, nil, err
			}
			stdio[0] = f
			closeAfterStart = append(closeAfterStart, f)
			continue
		}
		s, err := link.Open(k)
		if err != nil {
			return nil, nil, nil, err
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, nil, nil, err
		}
		drains.Add(1)
		if k == KindStdin {
			stdio[i] = pr
			closeAfterStart = append(closeAfterStart, pr)
			go func() { defer drains.Done(); io.Copy(pw, s); pw.Close(); s.Close() }()
		} else {
			stdio[i] = pw
			closeAfterStart = append(closeAfterStart, pw)
			go func() {
				defer drains.Done()
				io.Copy(s, pr)
				pr.Close()
				if cw, ok := s.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
				}
			}()
		}
	}
	return stdio, closeAfterStart, drains, nil
}

// agentCommand is the agent's init in the guest: pid 1 of its own pid namespace (/proc shows
// the agent's processes only), its own mount namespace for that /proc and its own IPC
// namespace, born in the agent's cgroup.
func agentCommand(cfg GuestConfig, stdio []*os.File, cg *os.File) *exec.Cmd {
	env := append(sandbox.BaseEnv(), cfg.Env...)
	args := []string{AgentCommand, "--uid", strconv.Itoa(cfg.UID), "--gid", strconv.Itoa(cfg.GID),
		"--file-size", strconv.FormatInt(cfg.FileSize, 10), "--"}
	return &exec.Cmd{
		Path: guestimage.InitPath, Args: append([]string{guestimage.InitPath}, append(args, cfg.Argv...)...),
		Env: env, Stdin: stdio[0], Stdout: stdio[1], Stderr: stdio[2],
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC,
			UseCgroupFD: true, CgroupFD: int(cg.Fd()),
		},
	}
}

// guestMounts mounts what init itself needs: devices (the link's port), /proc, /sys.
func guestMounts() error {
	for _, m := range []struct{ src, dst, fs string }{
		{"devtmpfs", "/dev", "devtmpfs"}, {"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"},
	} {
		if err := unix.Mount(m.src, m.dst, m.fs, unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s: %w", m.dst, err)
		}
	}
	return nil
}

func loadModules() error {
	b, err := os.ReadFile(guestimage.ModuleList)
	if err != nil {
		return fmt.Errorf("modules: %w", err)
	}
	for _, name := range strings.Fields(string(b)) {
		f, err := os.Open(filepath.Join(guestimage.ModuleDir, name))
		if err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("load module %s: %w", name, err)
		}
	}
	return nil
}

// openGuestLink waits (the device appears when virtio probes it) for the transport and opens
// the control stream, the link's first.
func openGuestLink(t Transport, port uint32) (GuestLink, net.Conn, error) {
	var l GuestLink
	switch t {
	case TransportVsock:
		l = NewVsockGuest(func() (net.Conn, error) { return vsock.Dial(vsock.Host, port, nil) })
	case TransportSerial:
	default:
		return nil, nil, fmt.Errorf("link transport %q: want serial or vsock", t)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if t == TransportSerial {
			var f *os.File
			if f, err = openSerialPort(); err == nil {
				l, err = NewSerialGuest(f)
			}
		}
		if err == nil {
			var c net.Conn
			if c, err = l.Open(KindControl); err == nil {
				return l, c, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("link (%s): %w", t, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func openSerialPort() (*os.File, error) {
	ports, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
	for _, p := range ports {
		b, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(b)) != LinkPortName {
			continue
		}
		return os.OpenFile("/dev/"+filepath.Base(filepath.Dir(p)), os.O_RDWR, 0)
	}
	return nil, errors.New("no virtio-serial port named " + LinkPortName)
}

// loopbackUp brings up lo, the guest's only network device (127.0.0.1 comes with it).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	return nil
}

// agentCgroup makes the agent's cgroup (v2) with the run's memory and task limits and
// returns its directory, which the agent's init is started in.
func agentCgroup(cfg GuestConfig) (*os.File, error) {
	if err := unix.Mount("cgroup2", "/sys/fs/cgroup", "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, fmt.Errorf("mount cgroup2: %w", err)
	}
	if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+memory +pids"), 0); err != nil {
		return nil, fmt.Errorf("cgroup controllers: %w", err)
	}
	if err := os.Mkdir(guestCgroup, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	for f, v := range map[string]int64{"memory.max": cfg.Memory, "memory.swap.max": 0, "pids.max": cfg.Tasks} {
		if err := os.WriteFile(filepath.Join(guestCgroup, f), []byte(strconv.FormatInt(v, 10)), 0); err != nil && !(f == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
			return nil, fmt.Errorf("cgroup %s: %w", f, err)
		}
	}
	return os.Open(guestCgroup)
}

// cgroupLimitHit reports the limit the agent's cgroup ran into, if any.
func cgroupLimitHit() reasons.Code {
	return launch.LimitHit(filepath.Join(guestCgroup, "memory.events"), filepath.Join(guestCgroup, "pids.events"))
}

// linkUpstream opens one endpoint stream over the link per connection the agent makes to
// 127.0.0.1:P; the host relays it to the run's endpoint socket.
type linkUpstream struct{ link GuestLink }

// Open implements runinit.Upstream.
func (u linkUpstream) Open(context.Context) (net.Conn, error) { return u.link.Open(KindEndpoint) }

// uptimeMS is the time since the guest kernel started.
func uptimeMS() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return ts.Nano() / 1e6
}

// powerOff ends the VM: the kernel's reset (reboot=t) makes QEMU, started with -no-reboot,
// exit. Nothing is written to disk in the guest, so there is nothing to sync but the shares.
func powerOff() {
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
	for {
		time.Sleep(time.Hour)
	}
}
