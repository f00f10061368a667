//go:build linux && (anettest || !amd64)

package seccomp

import (
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// denyRule refuses every call of the named syscalls with errno.
type denyRule struct {
	names []string
	errno unix.Errno
	why   string
}

// denyRules is the unconditional part of the main filter (S4: the union
// of flatpak, Docker's default profile, Codex and sandbox-runtime). Names must exist on every
// supported arch; arch-only names live in archSpec.extraDeny.
var denyRules = []denyRule{
	{names: []string{"unshare", "setns"}, errno: unix.EPERM,
		why: "new namespaces (user namespaces above all) are the kernel's largest attack surface"},
	{names: []string{"mount", "umount2", "pivot_root", "chroot"}, errno: unix.EPERM,
		why: "the mount table is fixed by bwrap before exec"},
	// ENOSYS, not EPERM: glibc and util-linux treat ENOSYS as "old kernel" and fall back to
	// clone(2) and mount(2), which the filter can inspect; EPERM would be final.
	{names: []string{"clone3"}, errno: unix.ENOSYS,
		why: "clone3 passes its flags in memory, where seccomp cannot see CLONE_NEWUSER"},
	{names: []string{"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"}, errno: unix.ENOSYS,
		why: "new mount API"},
	{names: []string{"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"}, errno: unix.EPERM,
		why: "tracing and reading other processes"},
	{names: []string{"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load"}, errno: unix.EPERM,
		why: "kernel modules and kexec"},
	{names: []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}, errno: unix.EPERM,
		why: "io_uring bypasses per-syscall filtering and has a long CVE record; libuv and others fall back"},
	{names: []string{"bpf", "perf_event_open", "userfaultfd"}, errno: unix.EPERM,
		why: "kernel exploitation primitives"},
	{names: []string{"add_key", "request_key", "keyctl"}, errno: unix.EPERM,
		why: "the kernel keyring is not namespaced"},
	{names: []string{"acct", "quotactl", "quotactl_fd", "syslog", "lookup_dcookie", "swapon", "swapoff", "reboot",
		"open_by_handle_at", "name_to_handle_at", "fanotify_init", "sethostname", "setdomainname"}, errno: unix.EPERM,
		why: "host administration interfaces"},
	{names: []string{"mbind", "move_pages", "migrate_pages", "set_mempolicy"}, errno: unix.EPERM,
		why: "NUMA policy of the host"},
}

// cloneNewMask is every CLONE_NEW* flag clone(2) accepts (Docker denies the same mask, 0x7E020000).
// CLONE_NEWTIME (0x80) is left out: in clone(2) that bit belongs to the exit signal, and the
// kernel accepts CLONE_NEWTIME only from clone3 and unshare, both denied outright.
const cloneNewMask = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// Values of the 32-bit arguments the hand-written part checks.
const (
	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541C
	personaLinux   = 0          // PER_LINUX, the default persona
	personaQuery   = 0xffffffff // personality(0xffffffff) only reads the persona
)

// allowedFamilies are the only socket families a run may create. AF_NETLINK is left out
// because nothing shown so far needs it: inside the run's netns (only lo), glibc's
// getaddrinfo(AI_ADDRCONFIG) falls back when its netlink probe fails, and Node's dns.lookup
// works; Node's os.networkInterfaces() does throw (uv_interface_addresses, errno 97). If an
// agent turns out to need it, allow AF_NETLINK with protocol NETLINK_ROUTE only.
var allowedFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}

// archSpec holds what differs between the supported architectures.
type archSpec struct {
	info *arch.Info
	// auditArch is the only seccomp_data.arch value the arch filter lets through.
	auditArch uint32
	// x32 is true on x86_64, where nr ≥ 0x40000000 selects the x32 ABI.
	x32 bool
	// extraDeny are EPERM names that exist on this arch only.
	extraDeny []string
}

// archSpecs is keyed by GOARCH. Names missing from an arch's table make Assemble fail, so
// each arch lists only the names it has (tested against both tables on any host).
var archSpecs = map[string]archSpec{
	"amd64": {info: arch.X86_64, auditArch: unix.AUDIT_ARCH_X86_64, x32: true,
		extraDeny: []string{"uselib", "iopl", "ioperm"}},
	"arm64": {info: arch.AARCH64, auditArch: unix.AUDIT_ARCH_AARCH64},
}
