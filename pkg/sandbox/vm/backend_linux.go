package vm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
	"anet.dev/anet/pkg/sandbox/vm/guestimage"
)

// Name is the backend's name in pkg/sandbox/launch's registry.
const Name = "vm"

// The backend registers after bwrap (it imports bwrap, whose init runs first), so bwrap stays
// the platform's preferred backend and this one is used only when named: --isolation vm.
func init() {
	launch.Register(Name, func(o launch.Options) (launch.Backend, error) {
		wall, err := bwrap.New(bwrap.Config{Self: o.Self, Log: o.Log})
		if err != nil {
			return nil, err
		}
		return New(Config{Wall: wall, Self: o.Self, Log: o.Log, AllowTCG: o.AllowEmulation,
			Kernel: guestimage.KernelSource{CacheDir: o.CacheDir}})
	})
}

// Config configures the vm backend. Zero fields take defaults.
type Config struct {
	// Wall is the bwrap backend whose wall QEMU runs in (required).
	Wall *bwrap.Backend
	// Self is the anet-sandboxd binary the guest runs as init; "" uses os.Executable().
	Self string
	// QEMU is qemu-system-x86_64; "" looks it up in PATH.
	QEMU string
	// Kernel says where the guest kernel comes from.
	Kernel guestimage.KernelSource
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
	// Hostname is the guest's host name; "" is launch.RunHostname.
	Hostname string
	Log      *slog.Logger
}

// Backend is the micro-VM isolation backend (launch.Backend, V1): pkg/sandbox/launch gates
// its runs on its probe, caches the probe, tracks the runs and watches each one.
type Backend struct {
	cfg Config

	mu    sync.Mutex // guards the fields below
	guest *guestFiles
	accel Accel // decided by the last passing probe
}

var _ launch.Backend = (*Backend)(nil)

// guestFiles are the prepared kernel and initramfs.
type guestFiles struct {
	kernel    guestimage.Kernel
	initramfs string
}

// New returns the vm backend. Problems with QEMU, the kernel or acceleration are reported by
// Probe (and so by the Launcher's Start) with their reason codes.
func New(cfg Config) (*Backend, error) {
	if cfg.Wall == nil {
		return nil, errors.New("vm backend: no bwrap wall")
	}
	self, err := launch.ResolveSelf(cfg.Self)
	if err != nil {
		return nil, fmt.Errorf("vm backend: %w", err)
	}
	cfg.Self = self
	if cfg.CPUs == 0 {
		cfg.CPUs = 1
	}
	if cfg.Hostname == "" {
		cfg.Hostname = launch.RunHostname
	}
	cfg.Log = launch.LogOrDiscard(cfg.Log)
	switch cfg.Accel {
	case "", AccelKVM, AccelTCG:
	default:
		return nil, fmt.Errorf("vm backend: accel %q: want kvm, tcg or empty", cfg.Accel)
	}
	if cfg.Kernel.CacheDir == "" {
		return nil, errors.New("vm backend: no cache dir for the guest kernel (--vm-cache)")
	}
	return &Backend{cfg: cfg}, nil
}

func (l *Backend) qemuPath() (string, error) {
	name := l.cfg.QEMU
	if name == "" {
		name = "qemu-system-x86_64"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", reasons.New(reasons.VMNoQEMU, err.Error())
	}
	return p, nil
}

// prepare extracts (first use) or finds the guest kernel and initramfs.
func (l *Backend) prepare(ctx context.Context) (*guestFiles, error) {
	l.mu.Lock()
	g := l.guest
	l.mu.Unlock()
	if g != nil {
		return g, nil
	}
	k, err := guestimage.PrepareKernel(ctx, l.cfg.Kernel)
	if err != nil {
		return nil, err
	}
	img, err := guestimage.BuildInitramfs(l.cfg.Self, k, l.cfg.Kernel.CacheDir)
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
func (l *Backend) accelCandidates() ([]Accel, error) {
	kvm := kvmUsable()
	switch l.cfg.Accel {
	case AccelKVM:
		if kvm != nil {
			return nil, reasons.New(reasons.VMNoAccel, "kvm forced but "+kvm.Error())
		}
		return []Accel{AccelKVM}, nil
	case AccelTCG:
		if !l.cfg.AllowTCG {
			return nil, reasons.New(reasons.VMNoAccel, "tcg forced but not allowed")
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
		return nil, reasons.New(reasons.VMNoAccel, "kvm: "+kvm.Error())
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
func (l *Backend) Accel() Accel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accel
}

// Transport is the link in use: the one for the accelerator the last passing probe chose.
func (l *Backend) Transport() Transport { return transportFor(l.Accel()) }

// transportFor is the link a guest under accel gets: vsock where the host has vhost-vsock and
// the guest runs under KVM, else serial. A probe and the runs it vouches for choose it alike.
func transportFor(accel Accel) Transport {
	if accel == AccelKVM && vhostVsockUsable() == nil {
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
