package vm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/sandbox/vm/guestimage"
)

// Accel is how QEMU runs the guest's instructions.
type Accel string

const (
	// AccelKVM uses the host's hardware virtualisation (used only when a probe boots a guest).
	AccelKVM Accel = "kvm"
	// AccelTCG is QEMU's software emulation: slow, used only when the operator allows it.
	AccelTCG Accel = "tcg"
)

// Transport is how the guest reaches the host.
type Transport string

const (
	// TransportVsock: one vsock connection per stream (hosts with vhost-vsock).
	TransportVsock Transport = "vsock"
	// TransportSerial: one virtio-serial port carrying yamux streams (everywhere else).
	TransportSerial Transport = "serial"
)

// Share is one host directory the guest mounts over 9p.
type Share struct {
	// Tag is the 9p mount tag ([a-z0-9_]{1,31}); Path the directory as QEMU sees it.
	Tag      string
	Path     string
	ReadOnly bool
}

// Machine is everything the QEMU command line depends on. Paths are as QEMU sees them
// (inside its bwrap wall).
type Machine struct {
	Accel Accel
	// MemoryMiB is the guest's RAM: the run's memory limit and the guest's own overhead.
	MemoryMiB int64
	// CPUs is 1 or 2.
	CPUs           int
	Kernel, Initrd string
	// Cmdline is the guest kernel's command line (KernelCmdline).
	Cmdline string
	// Transport selects the link device. Serial uses LinkSocket, a unix socket QEMU connects
	// to; vsock uses VsockCID (3 and up) and VhostVsock, the device QEMU opens.
	Transport  Transport
	LinkSocket string
	VsockCID   uint32
	Shares     []Share
	// TBSizeMiB bounds TCG's translation cache (QEMU's default is 1 GiB of address space).
	TBSizeMiB int
}

// LinkPortName is the virtio-serial port's name (the guest finds it in sysfs).
const LinkPortName = "anet.link"

// validTag reports whether tag is a 9p mount tag the guest accepts: [a-z0-9_]{1,31}. A loop,
// not a regexp: a package-level regexp is compiled at every start of anet-sandboxd, and
// `exec` starts once per command.
func validTag(tag string) bool {
	if len(tag) == 0 || len(tag) > 31 {
		return false
	}
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// QEMUArgs renders m into qemu-system-x86_64's arguments (without the program). It is pure
// and golden-tested. What it leaves out is as deliberate as what it puts in: -nodefaults and
// -no-user-config (no NIC, no USB, no VGA, no default serial or monitor, no config files),
// no -netdev at all, no monitor, no drive; QEMU's own seccomp sandbox denies obsolete calls,
// privilege changes, spawning processes and resource control.
func QEMUArgs(m Machine) ([]string, error) {
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("qemu args: %w", err)
	}
	a := []string{
		"-nodefaults", "-no-user-config", "-display", "none",
		// microvm: no PCI, no firmware tables beyond ACPI's, virtio-mmio devices only.
		// Reduced-hardware ACPI is how the guest finds them (Debian's kernel lacks
		// virtio_mmio.device= command-line devices); no legacy PIT/PIC.
		"-machine", "microvm,acpi=on,pit=off,pic=off,rtc=on,isa-serial=on",
		"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
		"-no-reboot", // the guest's reset (its power-off) ends QEMU
		"-m", strconv.FormatInt(m.MemoryMiB, 10) + "M",
		"-smp", strconv.Itoa(m.CPUs),
	}
	switch m.Accel {
	case AccelKVM:
		a = append(a, "-accel", "kvm", "-cpu", "host")
	case AccelTCG:
		// max: AVX2 and the other extensions agents' runtimes expect (TCG has them since 7.2).
		tb := m.TBSizeMiB
		if tb == 0 {
			tb = 64
		}
		a = append(a, "-accel", "tcg,tb-size="+strconv.Itoa(tb), "-cpu", "max")
	}
	a = append(a,
		// The serial console: the kernel's and init's messages, read by the host for
		// diagnosis only (the agent's output travels over the link).
		"-chardev", "stdio,id=con,signal=off", "-serial", "chardev:con",
		"-kernel", m.Kernel, "-initrd", m.Initrd, "-append", m.Cmdline,
	)
	switch m.Transport {
	case TransportSerial:
		a = append(a,
			"-chardev", "socket,id=link,path="+m.LinkSocket,
			"-device", "virtio-serial-device,max_ports=2",
			"-device", "virtserialport,chardev=link,name="+LinkPortName,
		)
	case TransportVsock:
		a = append(a, "-device", "vhost-vsock-device,guest-cid="+strconv.FormatUint(uint64(m.VsockCID), 10))
	}
	for i, s := range m.Shares {
		id := "fs" + strconv.Itoa(i)
		fsdev := "local,id=" + id + ",path=" + s.Path + ",security_model=none"
		if s.ReadOnly {
			fsdev += ",readonly=on"
		}
		a = append(a, "-fsdev", fsdev, "-device", "virtio-9p-device,fsdev="+id+",mount_tag="+s.Tag)
	}
	return a, nil
}

func (m Machine) validate() error {
	var errs []error
	switch m.Accel {
	case AccelKVM, AccelTCG:
	default:
		errs = append(errs, fmt.Errorf("accel %q: want kvm or tcg", m.Accel))
	}
	if m.MemoryMiB < 64 {
		errs = append(errs, fmt.Errorf("memory %d MiB: want at least 64", m.MemoryMiB))
	}
	if m.CPUs < 1 || m.CPUs > 2 {
		errs = append(errs, fmt.Errorf("cpus %d: want 1 or 2", m.CPUs))
	}
	// QEMU splits option values at commas; a path with one would smuggle in an option.
	noComma := func(name, v string) {
		if v == "" || strings.ContainsAny(v, ",\x00") || !strings.HasPrefix(v, "/") {
			errs = append(errs, fmt.Errorf("%s %q: want an absolute path without commas", name, v))
		}
	}
	noComma("kernel", m.Kernel)
	noComma("initrd", m.Initrd)
	switch m.Transport {
	case TransportSerial:
		noComma("link socket", m.LinkSocket)
	case TransportVsock:
		if m.VsockCID < 3 {
			errs = append(errs, fmt.Errorf("vsock cid %d: want 3 or more (0-2 are reserved)", m.VsockCID))
		}
	default:
		errs = append(errs, fmt.Errorf("transport %q: want serial or vsock", m.Transport))
	}
	if strings.ContainsRune(m.Cmdline, 0) {
		errs = append(errs, errors.New("cmdline: contains NUL"))
	}
	tags := map[string]bool{}
	for _, s := range m.Shares {
		if !validTag(s.Tag) || tags[s.Tag] {
			errs = append(errs, fmt.Errorf("share tag %q: want a unique [a-z0-9_]{1,31}", s.Tag))
		}
		tags[s.Tag] = true
		noComma("share "+s.Tag, s.Path)
	}
	return errors.Join(errs...)
}

// KernelCmdline is the guest kernel's command line. The parameters trim boot time where the
// hardware is known (no PCI, no PS/2, no timer check, no crypto self-tests) and make a panic
// or a triple fault end QEMU at once. tscKHz (TCG only) gives the TSC rate the kernel cannot
// calibrate on reduced-hardware ACPI without KVM's clock; 0 leaves it to the kernel.
func KernelCmdline(tscKHz int, t Transport, vsockPort uint32) string {
	c := "console=ttyS0 quiet panic=-1 reboot=t pci=off i8042.noaux i8042.nokbd no_timer_check cryptomgr.notests " +
		"8250.nr_uarts=1 random.trust_cpu=on rdinit=" + guestimage.InitPath
	if tscKHz > 0 {
		c += " tsc_early_khz=" + strconv.Itoa(tscKHz) + " tsc=reliable"
	}
	// Everything after "--" goes to init as its arguments: the guest subcommand.
	c += " -- " + GuestCommand + " --link " + string(t)
	if t == TransportVsock {
		c += " --vsock-port " + strconv.FormatUint(uint64(vsockPort), 10)
	}
	return c
}

// GuestCommand is the anet-sandboxd subcommand the guest kernel runs as pid 1.
const GuestCommand = "vm-guest"
