package vm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
)

// Config configures the VM launcher. Zero fields take defaults.
type Config struct {
	// Wall is the bwrap launcher whose wall QEMU runs in (required).
	Wall *bwrap.Launcher
	// Self is the anet-sandboxd binary the guest runs as init; "" uses os.Executable().
	Self string
	// QEMU is qemu-system-x86_64; "" looks it up in PATH.
	QEMU string
	// Kernel says where the guest kernel comes from.
	Kernel KernelSource
	// Accel forces an accelerator; "" probes: kvm when a guest boots under it, else tcg
	// when AllowTCG.
	Accel Accel
	// AllowTCG accepts software emulation (slow: seconds per boot). Off unless the operator
	// says so.
	AllowTCG bool
	// CPUs is the guest's vCPU count (1 or 2; default 1).
	CPUs int
	// BootTimeout bounds the time from QEMU's start to the agent's start; default 15s under
	// KVM and 90s under TCG.
	BootTimeout time.Duration
	// Hostname is the guest's host name; "" is "anet-run".
	Hostname string
	Log      *slog.Logger
}

// Launcher is the micro-VM implementation of sandbox.Launcher (V1).
type Launcher struct {
	cfg   Config
	cache sandbox.ProbeCache

	mu    sync.Mutex // guards the fields below
	guest *guestFiles
	accel Accel // decided by the last probe
	runs  map[*run]bool
}

var _ sandbox.Launcher = (*Launcher)(nil)

// guestFiles are the prepared kernel and initramfs.
type guestFiles struct {
	kernel    GuestKernel
	initramfs string
}

// New returns a VM launcher. Problems with QEMU, the kernel or acceleration are reported by
// Probe (and so by Start) with their reason codes.
func New(cfg Config) (*Launcher, error) {
	if cfg.Wall == nil {
		return nil, errors.New("vm launcher: no bwrap wall")
	}
	if cfg.Self == "" {
		p, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("vm launcher: find own binary: %w", err)
		}
		cfg.Self = p
	}
	real, err := filepath.EvalSymlinks(cfg.Self)
	if err != nil {
		return nil, fmt.Errorf("vm launcher: resolve %s: %w", cfg.Self, err)
	}
	cfg.Self = real
	if cfg.CPUs == 0 {
		cfg.CPUs = 1
	}
	if cfg.Hostname == "" {
		cfg.Hostname = "anet-run"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	switch cfg.Accel {
	case "", AccelKVM, AccelTCG:
	default:
		return nil, fmt.Errorf("vm launcher: accel %q: want kvm, tcg or empty", cfg.Accel)
	}
	if cfg.Kernel.CacheDir == "" {
		return nil, errors.New("vm launcher: no cache dir for the guest kernel")
	}
	return &Launcher{cfg: cfg, runs: map[*run]bool{}}, nil
}

func (l *Launcher) qemuPath() (string, error) {
	name := l.cfg.QEMU
	if name == "" {
		name = "qemu-system-x86_64"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", reasons.New(NoQEMU, err.Error())
	}
	return p, nil
}

// prepare extracts (first use) or finds the guest kernel and initramfs.
func (l *Launcher) prepare(ctx context.Context) (*guestFiles, error) {
	l.mu.Lock()
	g := l.guest
	l.mu.Unlock()
	if g != nil {
		return g, nil
	}
	k, err := PrepareKernel(ctx, l.cfg.Kernel)
	if err != nil {
		return nil, err
	}
	img, err := BuildInitramfs(l.cfg.Self, k, l.cfg.Kernel.CacheDir)
	if err != nil {
		return nil, reasons.New(reasons.SandboxStartFailed, err.Error())
	}
	g = &guestFiles{kernel: k, initramfs: img}
	l.mu.Lock()
	l.guest = g
	l.mu.Unlock()
	return g, nil
}

// accelCandidates lists the accelerators to try, best first, or why there is none.
func (l *Launcher) accelCandidates() ([]Accel, error) {
	kvm := kvmUsable()
	switch l.cfg.Accel {
	case AccelKVM:
		if kvm != nil {
			return nil, reasons.New(NoAccel, "kvm forced but "+kvm.Error())
		}
		return []Accel{AccelKVM}, nil
	case AccelTCG:
		if !l.cfg.AllowTCG {
			return nil, reasons.New(NoAccel, "tcg forced but not allowed")
		}
		return []Accel{AccelTCG}, nil
	}
	var out []Accel
	if kvm == nil {
		out = append(out, AccelKVM)
	}
	if l.cfg.AllowTCG {
		out = append(out, AccelTCG)
	}
	if len(out) == 0 {
		return nil, reasons.New(NoAccel, "kvm: "+kvm.Error())
	}
	return out, nil
}

// kvmUsable reports why /dev/kvm cannot be used, or nil. Whether a guest actually boots
// under it is the probe's question.
func kvmUsable() error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// Accel returns the accelerator the last passing probe chose ("" before one).
func (l *Launcher) Accel() Accel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accel
}

// Transport is the link in use: vsock where the host has vhost-vsock and KVM, else serial.
func (l *Launcher) Transport() Transport {
	if l.Accel() == AccelKVM && vhostVsockUsable() == nil {
		return TransportVsock
	}
	return TransportSerial
}

func vhostVsockUsable() error {
	f, err := os.OpenFile("/dev/vhost-vsock", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// KillAll ends every run now and waits for them to be gone.
func (l *Launcher) KillAll() {
	l.mu.Lock()
	runs := make([]*run, 0, len(l.runs))
	for r := range l.runs {
		runs = append(runs, r)
	}
	l.mu.Unlock()
	for _, r := range runs {
		r.kill()
	}
	for _, r := range runs {
		r.Wait()
	}
}

// hostTSCKHz reads the host's TSC rate for a TCG guest (whose TSC is the host's), from the
// first "cpu MHz" line; 0 when unknown (the guest then calibrates, slower).
func hostTSCKHz() int {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil && mhz > 0 {
				return int(mhz * 1000)
			}
		}
	}
	return 0
}
