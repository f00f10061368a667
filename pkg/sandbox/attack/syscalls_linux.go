package attack

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

type family struct {
	name   string
	af     uint64
	typ    int
	proto  int
	reason string
}

var (
	afVSOCK   = family{"AF_VSOCK", unix.AF_VSOCK, unix.SOCK_STREAM, 0, "vsock is not network-namespaced and reaches the hypervisor host"}
	afPACKET  = family{"AF_PACKET", unix.AF_PACKET, unix.SOCK_DGRAM, 0, "raw link-layer access"}
	afALG     = family{"AF_ALG", unix.AF_ALG, unix.SOCK_SEQPACKET, 0, "kernel crypto API, a frequent exploit path"}
	afNETLINK = family{"AF_NETLINK", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE, "kernel configuration interfaces"}
)

// attackSocket creates a socket of a refused family (EAFNOSUPPORT from the filter). With
// highBits the family carries bits above 31, which the kernel drops: a filter comparing
// 64 bits would be bypassed (pkg/sandbox/seccomp, pitfall 1).
func attackSocket(f family, highBits bool) func(Env) Result {
	return func(Env) Result {
		af := f.af
		what := "socket(" + f.name
		if highBits {
			af |= 0xdead << 32
			what += " | 0xdead<<32"
		}
		what += ")"
		fd, _, e := syscall.RawSyscall(unix.SYS_SOCKET, uintptr(af), uintptr(f.typ|unix.SOCK_CLOEXEC), uintptr(f.proto))
		r := expectErrno(what, errOrNil(e), syscall.EAFNOSUPPORT)
		if e == 0 {
			closeFD(int(fd))
			r.Detail += ": " + f.reason
		}
		return r
	}
}

func errOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// attackProcessVMReadv reads memory of pid 1 (the sandbox's init) (S4).
func attackProcessVMReadv(Env) Result {
	buf := make([]byte, 8)
	local := []unix.Iovec{{Base: &buf[0], Len: 8}}
	remote := []unix.RemoteIovec{{Base: 0x400000, Len: 8}}
	_, err := unix.ProcessVMReadv(1, local, remote, 0)
	return expectErrno("process_vm_readv(pid 1)", err, syscall.EPERM)
}

// attackProc1Environ reads the environment of pid 1 (the sandbox's init). init runs with the
// agent's uid, so only its non-dumpable flag keeps the agent out of its /proc files (S4):
// EACCES is that protection; a read means init's memory is open to the agent.
func attackProc1Environ(Env) Result {
	b, err := os.ReadFile("/proc/1/environ")
	if err == nil {
		return notBlocked("succeeded", fmt.Sprintf("read /proc/1/environ: %d bytes", len(b)))
	}
	return expectErrno("read /proc/1/environ", err, syscall.EACCES)
}

// scratchDir makes a fresh directory to aim mount attacks at, so that even a successful
// attack on an unsandboxed host touches nothing that matters.
func scratchDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "anet-attack-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.Remove(dir) }, nil
}

func attackMount(Env) Result {
	dir, done, err := scratchDir()
	if err != nil {
		return notBlocked("error", fmt.Sprintf("make scratch dir: %v", err))
	}
	defer done()
	err = unix.Mount("anet-attack", dir, "tmpfs", 0, "size=64k")
	if err == nil {
		unix.Unmount(dir, unix.MNT_DETACH)
	}
	return expectErrno("mount tmpfs on "+dir, err, syscall.EPERM)
}

// attackUmount2 detaches a scratch dir; unfiltered, the kernel would say EINVAL (not a mount
// point) or EPERM (no capability); the filter says EPERM first.
func attackUmount2(Env) Result {
	dir, done, err := scratchDir()
	if err != nil {
		return notBlocked("error", fmt.Sprintf("make scratch dir: %v", err))
	}
	defer done()
	return expectErrno("umount2("+dir+")", unix.Unmount(dir, unix.MNT_DETACH), syscall.EPERM)
}

func attackPivotRoot(Env) Result {
	dir, done, err := scratchDir()
	if err != nil {
		return notBlocked("error", fmt.Sprintf("make scratch dir: %v", err))
	}
	defer done()
	return expectErrno("pivot_root("+dir+")", unix.PivotRoot(dir, dir), syscall.EPERM)
}

func attackFsopen(Env) Result {
	fd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err == nil {
		closeFD(fd)
	}
	return expectErrno("fsopen(tmpfs)", err, syscall.ENOSYS)
}

func attackOpenTree(Env) Result {
	fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err == nil {
		closeFD(fd)
	}
	return expectErrno("open_tree(/, OPEN_TREE_CLONE)", err, syscall.ENOSYS)
}

// attackClone3 asks clone3 for a new user namespace together with CLONE_FS, a combination
// the kernel itself rejects with EINVAL before creating anything. So this never forks: ENOSYS
// can only come from the filter, EINVAL means clone3 reached the kernel, where its flags are
// out of the filter's sight.
func attackClone3(Env) Result {
	args := struct {
		flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls uint64
	}{flags: unix.CLONE_NEWUSER | unix.CLONE_FS, exitSignal: uint64(unix.SIGCHLD)}
	_, _, e := syscall.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args), 0)
	return expectErrno("clone3(CLONE_NEWUSER)", errOrNil(e), syscall.ENOSYS)
}

// attackUnshareNewuser has a freshly forked, single-threaded child call
// unshare(CLONE_NEWUSER) before exec (Go's SysProcAttr.Unshareflags). EPERM is the filter;
// ENOSPC is bwrap's --disable-userns (max_user_namespaces=1): both deny (S7 property 5).
func attackUnshareNewuser(env Env) Result {
	return namespaceChild(env, "unshare(CLONE_NEWUSER)", &syscall.SysProcAttr{Unshareflags: unix.CLONE_NEWUSER},
		syscall.EPERM, syscall.ENOSPC)
}

// attackCloneNewuser forks with the raw clone(2) syscall and CLONE_NEWUSER (Go's
// SysProcAttr.Cloneflags uses clone, not clone3, without a cgroup fd).
func attackCloneNewuser(env Env) Result {
	return namespaceChild(env, "clone(CLONE_NEWUSER)", &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER},
		syscall.EPERM)
}

func namespaceChild(env Env, what string, attr *syscall.SysProcAttr, want ...syscall.Errno) Result {
	argv := append(append([]string{}, env.childArgv()...), "noop")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = attr
	cmd.Env = []string{}
	err := cmd.Start()
	if err == nil {
		cmd.Wait()
		return notBlocked("succeeded", what+" succeeded: a child ran in a new user namespace")
	}
	return expectErrno(what, err, want...)
}

// attackKeyctl reads the session keyring's id (S7 property 4).
func attackKeyctl(Env) Result {
	_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
	return expectErrno("keyctl(KEYCTL_GET_KEYRING_ID)", err, syscall.EPERM)
}

// attackAddKey adds a key to the process keyring (gone when the process ends).
func attackAddKey(Env) Result {
	_, err := unix.AddKey("user", "anet-attack", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
	return expectErrno("add_key(user)", err, syscall.EPERM)
}

// attackBPF creates a one-entry array map.
func attackBPF(Env) Result {
	attr := struct{ mapType, keySize, valueSize, maxEntries, flags uint32 }{mapType: 2 /* BPF_MAP_TYPE_ARRAY */, keySize: 4, valueSize: 4, maxEntries: 1}
	fd, _, e := syscall.RawSyscall(unix.SYS_BPF, 0 /* BPF_MAP_CREATE */, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if e == 0 {
		closeFD(int(fd))
	}
	return expectErrno("bpf(BPF_MAP_CREATE)", errOrNil(e), syscall.EPERM)
}

// attackPerfEventOpen counts its own user-space CPU clock, which even perf_event_paranoid=2
// allows: EPERM can then only come from the filter.
func attackPerfEventOpen(Env) Result {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		closeFD(fd)
	}
	return expectErrno("perf_event_open(self, cpu clock)", err, syscall.EPERM)
}

func attackIOUringSetup(Env) Result {
	var params [120]byte // struct io_uring_params
	fd, _, e := syscall.RawSyscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if e == 0 {
		closeFD(int(fd))
	}
	return expectErrno("io_uring_setup(1)", errOrNil(e), syscall.EPERM)
}

// attackInitModule loads an empty module image (the kernel would refuse it as ENOEXEC or,
// without modules, ENOSYS; the filter answers EPERM before that).
func attackInitModule(Env) Result {
	params := []byte{0}
	_, _, e := syscall.RawSyscall(unix.SYS_INIT_MODULE, 0, 0, uintptr(unsafe.Pointer(&params[0])))
	return expectErrno("init_module(empty)", errOrNil(e), syscall.EPERM)
}

// attackUserfaultfd asks for a user-mode-only userfaultfd, which the kernel grants without
// privileges (vm.unprivileged_userfaultfd does not apply to it).
func attackUserfaultfd(Env) Result {
	const uffdUserModeOnly = 1
	fd, _, e := syscall.RawSyscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|uffdUserModeOnly, 0, 0)
	if e == 0 {
		closeFD(int(fd))
	}
	return expectErrno("userfaultfd(UFFD_USER_MODE_ONLY)", errOrNil(e), syscall.EPERM)
}
