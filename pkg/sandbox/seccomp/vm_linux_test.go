//go:build linux && (anettest || !amd64)

package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData is a fake struct seccomp_data for the golang.org/x/net/bpf VM, in the manner of
// runc's patchbpf tests: no kernel needed.
type seccompData struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// bytes lays d out like the kernel does. The VM loads 32-bit words big-endian (it is a packet
// filter), the kernel loads them in native order: each word is stored so the VM reads the
// value the kernel would read at that offset.
func (d seccompData) bytes() []byte {
	var mem [64]byte
	binary.NativeEndian.PutUint32(mem[0:], d.nr)
	binary.NativeEndian.PutUint32(mem[4:], d.arch)
	for i, a := range d.args {
		binary.NativeEndian.PutUint64(mem[16+8*i:], a)
	}
	out := make([]byte, 64)
	for off := 0; off < 64; off += 4 {
		binary.BigEndian.PutUint32(out[off:], binary.NativeEndian.Uint32(mem[off:]))
	}
	return out
}

func (d seccompData) String() string {
	return fmt.Sprintf("{nr %d arch %#x args %#x}", d.nr, d.arch, d.args[:3])
}

// runProg runs one raw program in the VM and returns its verdict.
func runProg(t *testing.T, prog []byte, d seccompData) uint32 {
	t.Helper()
	raw, err := decode(prog)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("program holds instructions the VM cannot decode")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("bpf.NewVM: %v", err)
	}
	v, err := vm.Run(d.bytes())
	if err != nil {
		t.Fatalf("vm.Run(%v): %v", d, err)
	}
	return uint32(v)
}

// verdict combines the programs as the kernel does (seccomp_run_filters): the action with
// the lowest value read as a signed 32-bit number wins; KILL_PROCESS (0x80000000) beats all.
func verdict(t *testing.T, progs [][]byte, d seccompData) uint32 {
	t.Helper()
	best := uint32(unix.SECCOMP_RET_ALLOW)
	for _, p := range progs {
		v := runProg(t, p, d)
		if int32(v&unix.SECCOMP_RET_ACTION_FULL) < int32(best&unix.SECCOMP_RET_ACTION_FULL) {
			best = v
		}
	}
	return best
}

func describe(v uint32) string {
	switch v & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return "ALLOW"
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "KILL_PROCESS"
	case unix.SECCOMP_RET_ERRNO:
		return "ERRNO " + unix.ErrnoName(unix.Errno(v&unix.SECCOMP_RET_DATA))
	}
	return fmt.Sprintf("%#x", v)
}

var (
	allow = "ALLOW"
	kill  = "KILL_PROCESS"
)

func errnoVerdict(e unix.Errno) string { return "ERRNO " + unix.ErrnoName(e) }

func nativeInfo(t *testing.T) (*arch.Info, uint32) {
	t.Helper()
	switch runtime.GOARCH {
	case "amd64":
		return arch.X86_64, unix.AUDIT_ARCH_X86_64
	case "arm64":
		return arch.AARCH64, unix.AUDIT_ARCH_AARCH64
	}
	t.Fatalf("no filter definition for %s: the sandbox cannot run here", runtime.GOARCH)
	return nil, 0
}

func nr(t *testing.T, info *arch.Info, name string) uint32 {
	t.Helper()
	n, ok := info.SyscallNames[name]
	if !ok {
		t.Fatalf("syscall %s unknown on %s", name, info.Name)
	}
	return uint32(n)
}

// The syscall table the tests use must agree with the kernel ABI constants.
func TestSyscallTableMatchesABI(t *testing.T) {
	info, _ := nativeInfo(t)
	for name, want := range map[string]uintptr{
		"ioctl": unix.SYS_IOCTL, "socket": unix.SYS_SOCKET, "socketpair": unix.SYS_SOCKETPAIR,
		"clone": unix.SYS_CLONE, "keyctl": unix.SYS_KEYCTL, "personality": unix.SYS_PERSONALITY,
		"unshare": unix.SYS_UNSHARE, "clone3": unix.SYS_CLONE3,
	} {
		if got := nr(t, info, name); uintptr(got) != want {
			t.Errorf("table nr(%s) = %d, want %d", name, got, want)
		}
	}
}

// S4's deny list, written out here independently of policy_linux.go (S4).
var wantEPERM = []string{
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
	"add_key", "request_key", "keyctl",
	"acct", "quotactl", "quotactl_fd", "syslog", "lookup_dcookie", "swapon", "swapoff", "reboot",
	"open_by_handle_at", "name_to_handle_at", "fanotify_init", "sethostname", "setdomainname",
	"mbind", "move_pages", "migrate_pages", "set_mempolicy",
}

var wantEPERMAmd64 = []string{"uselib", "iopl", "ioperm"}

var wantENOSYS = []string{"clone3", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"}

// TestMainFilterVM checks every rule of the main filter, and the calls that must stay
// allowed, in the BPF VM (S4).
func TestMainFilterVM(t *testing.T) {
	progs := filters(t)
	info, native := nativeInfo(t)
	call := func(name string, args ...uint64) seccompData {
		d := seccompData{nr: nr(t, info, name), arch: native}
		copy(d.args[:], args)
		return d
	}
	type tc struct {
		name string
		data seccompData
		want string
	}
	var cases []tc
	eperm := wantEPERM
	if runtime.GOARCH == "amd64" {
		eperm = append(append([]string{}, eperm...), wantEPERMAmd64...)
	}
	for _, n := range eperm {
		cases = append(cases, tc{"deny/" + n, call(n), errnoVerdict(unix.EPERM)})
	}
	for _, n := range wantENOSYS {
		cases = append(cases, tc{"enosys/" + n, call(n), errnoVerdict(unix.ENOSYS)})
	}
	for _, f := range []struct {
		name string
		flag uint64
	}{
		{"NEWUSER", unix.CLONE_NEWUSER}, {"NEWNS", unix.CLONE_NEWNS}, {"NEWPID", unix.CLONE_NEWPID},
		{"NEWNET", unix.CLONE_NEWNET}, {"NEWIPC", unix.CLONE_NEWIPC}, {"NEWUTS", unix.CLONE_NEWUTS},
		{"NEWCGROUP", unix.CLONE_NEWCGROUP},
	} {
		cases = append(cases, tc{"clone/" + f.name, call("clone", f.flag|uint64(unix.SIGCHLD)), errnoVerdict(unix.EPERM)})
	}
	eafn := errnoVerdict(unix.EAFNOSUPPORT)
	cases = append(cases,
		// Go's thread creation and os/exec (CLONE_VFORK|CLONE_VM|CLONE_PIDFD) must pass.
		tc{"allow/clone_thread", call("clone", unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_SYSVSEM|unix.CLONE_THREAD), allow},
		tc{"allow/clone_fork", call("clone", uint64(unix.SIGCHLD)), allow},
		tc{"allow/clone_vfork_pidfd", call("clone", unix.CLONE_VFORK|unix.CLONE_VM|unix.CLONE_PIDFD|uint64(unix.SIGCHLD)), allow},
		tc{"allow/read", call("read", 0, 0, 1), allow},
		tc{"allow/write", call("write", 1, 0, 1), allow},
		tc{"allow/openat", call("openat", 0xffffff9c, 0, 0), allow},
		tc{"allow/execve", call("execve"), allow},
		tc{"allow/mmap", call("mmap"), allow},
		tc{"allow/seccomp", call("seccomp"), allow},
		tc{"allow/socket_inet", call("socket", unix.AF_INET, unix.SOCK_STREAM), allow},
		tc{"allow/socket_inet6", call("socket", unix.AF_INET6, unix.SOCK_DGRAM), allow},
		tc{"allow/socket_unix", call("socket", unix.AF_UNIX, unix.SOCK_STREAM), allow},
		tc{"allow/socketpair_unix", call("socketpair", unix.AF_UNIX, unix.SOCK_SEQPACKET), allow},
		// The kernel reads family as int: AF_INET with high bits is AF_INET.
		tc{"allow/socket_inet_highbits", call("socket", 1<<32|unix.AF_INET, unix.SOCK_STREAM), allow},
		tc{"allow/ioctl_TCGETS", call("ioctl", 0, unix.TCGETS), allow},
		tc{"allow/ioctl_TIOCSTI_in_high_bits_only", call("ioctl", 0, ioctlTIOCSTI<<32|unix.TCGETS), allow},
		tc{"allow/personality_PER_LINUX", call("personality", 0), allow},
		tc{"allow/personality_query", call("personality", 0xffffffff), allow},
		tc{"allow/personality_query_sign_extended", call("personality", 0xffffffffffffffff), allow},

		tc{"ioctl/TIOCSTI", call("ioctl", 0, 0x5412), errnoVerdict(unix.EPERM)},
		tc{"ioctl/TIOCLINUX", call("ioctl", 0, 0x541C), errnoVerdict(unix.EPERM)},
		// Gotcha 1: the kernel truncates the request to 32 bits, so high bits must not help.
		tc{"ioctl/TIOCSTI_high_bits", call("ioctl", 0, 0xdead00005412), errnoVerdict(unix.EPERM)},
		tc{"ioctl/TIOCLINUX_all_high_bits", call("ioctl", 0, 0xffffffff0000541C), errnoVerdict(unix.EPERM)},

		tc{"socket/AF_VSOCK", call("socket", 40, unix.SOCK_STREAM), eafn},
		tc{"socket/AF_VSOCK_high_bits", call("socket", 40|1<<32, unix.SOCK_STREAM), eafn},
		tc{"socket/AF_PACKET", call("socket", unix.AF_PACKET, unix.SOCK_RAW), eafn},
		tc{"socket/AF_ALG", call("socket", unix.AF_ALG, unix.SOCK_SEQPACKET), eafn},
		tc{"socket/AF_NETLINK", call("socket", unix.AF_NETLINK, unix.SOCK_RAW), eafn},
		tc{"socket/AF_KEY", call("socket", unix.AF_KEY, unix.SOCK_RAW), eafn},
		tc{"socket/AF_BLUETOOTH", call("socket", unix.AF_BLUETOOTH, unix.SOCK_RAW), eafn},
		tc{"socket/AF_UNSPEC", call("socket", unix.AF_UNSPEC, unix.SOCK_STREAM), eafn},
		tc{"socket/minus_one", call("socket", 0xffffffff, unix.SOCK_STREAM), eafn},
		tc{"socketpair/AF_VSOCK", call("socketpair", 40, unix.SOCK_STREAM), eafn},
		tc{"socketpair/AF_NETLINK", call("socketpair", unix.AF_NETLINK, unix.SOCK_RAW), eafn},

		tc{"personality/PER_LINUX32", call("personality", 0x0008), errnoVerdict(unix.EPERM)},
		tc{"personality/ADDR_NO_RANDOMIZE", call("personality", 0x0040000), errnoVerdict(unix.EPERM)},
		tc{"personality/READ_IMPLIES_EXEC", call("personality", 0x0400000), errnoVerdict(unix.EPERM)},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := describe(verdict(t, progs, c.data)); got != c.want {
				t.Errorf("verdict(%v) = %s, want %s", c.data, got, c.want)
			}
			// The arch filter alone must allow every native, non-x32 call.
			if got := describe(runProg(t, progs[0], c.data)); got != allow {
				t.Errorf("arch filter(%v) = %s, want %s", c.data, got, allow)
			}
		})
	}
}

// TestArchFilterVM checks that foreign ABIs are killed (S4, seccomp pitfall 2).
func TestArchFilterVM(t *testing.T) {
	progs := filters(t)
	info, native := nativeInfo(t)
	keyctl386 := nr(t, arch.I386, "keyctl")
	type tc struct {
		name string
		data seccompData
	}
	cases := []tc{
		{"i386_keyctl", seccompData{nr: keyctl386, arch: unix.AUDIT_ARCH_I386}},
		{"i386_getpid", seccompData{nr: nr(t, arch.I386, "getpid"), arch: unix.AUDIT_ARCH_I386}},
		{"arm32_keyctl", seccompData{nr: nr(t, arch.ARM, "keyctl"), arch: unix.AUDIT_ARCH_ARM}},
	}
	switch runtime.GOARCH {
	case "amd64":
		x32Getpid := nr(t, info, "getpid") | x32SyscallBit
		cases = append(cases,
			tc{"aarch64_on_amd64", seccompData{nr: nr(t, arch.AARCH64, "getpid"), arch: unix.AUDIT_ARCH_AARCH64}},
			tc{"x32_getpid", seccompData{nr: x32Getpid, arch: native}},
			tc{"x32_keyctl", seccompData{nr: uint32(arch.X32.SyscallNames["keyctl"]) | x32SyscallBit, arch: native}},
			tc{"nr_minus_one", seccompData{nr: 0xffffffff, arch: native}},
		)
	case "arm64":
		cases = append(cases, tc{"x86_64_on_arm64", seccompData{nr: nr(t, arch.X86_64, "getpid"), arch: unix.AUDIT_ARCH_X86_64}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := describe(runProg(t, progs[0], c.data)); got != kill {
				t.Errorf("arch filter(%v) = %s, want %s", c.data, got, kill)
			}
			if got := describe(verdict(t, progs, c.data)); got != kill {
				t.Errorf("verdict(%v) = %s, want %s", c.data, got, kill)
			}
		})
	}
	// Gotcha 2 as a fact: the main filter alone lets an i386 keyctl through, which is why the
	// arch filter must exist. If this starts failing, the library changed; keep both anyway.
	t.Run("main_filter_alone_allows_foreign_arch", func(t *testing.T) {
		d := seccompData{nr: keyctl386, arch: unix.AUDIT_ARCH_I386}
		if got := describe(runProg(t, progs[1], d)); got != allow {
			t.Errorf("main filter(%v) = %s, want %s (the documented gap)", d, got, allow)
		}
	})
}

// TestPerArchNameLists assembles nothing but checks every name against both arches' tables,
// so an arm64 build cannot fail at start-up because of a name only amd64 has.
func TestPerArchNameLists(t *testing.T) {
	for goarch, spec := range archSpecs {
		t.Run(goarch, func(t *testing.T) {
			var names []string
			for _, r := range denyRules {
				names = append(names, r.names...)
			}
			names = append(names, spec.extraDeny...)
			names = append(names, "clone")
			for _, r := range argRules {
				names = append(names, r.name)
			}
			for _, n := range names {
				if _, ok := spec.info.SyscallNames[n]; !ok {
					t.Errorf("%s: syscall %q missing from the %s table", goarch, n, spec.info.Name)
				}
			}
			if uint32(spec.info.ID) != spec.auditArch {
				t.Errorf("%s: audit arch %#x, table says %#x", goarch, spec.auditArch, spec.info.ID)
			}
		})
	}
}
