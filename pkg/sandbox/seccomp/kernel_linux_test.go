package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childEnv switches the re-executed test binary into a child role (see TestMain).
const childEnv = "ANET_SECCOMP_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "probes-filtered":
		installOrDie()
		runProbes()
	case "probes-plain":
		runProbes()
	case "x32-filtered":
		installOrDie()
		x32Getpid()
	case "x32-plain":
		x32Getpid()
	default:
		fmt.Fprintln(os.Stderr, "unknown child role")
		os.Exit(2)
	}
	os.Exit(0)
}

func installOrDie() {
	progs, err := Filters(Options{})
	if err == nil {
		err = Install(progs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

func x32Getpid() {
	if runtime.GOARCH != "amd64" {
		fmt.Println("not amd64")
		return
	}
	r, _, e := syscall.RawSyscall(x32SyscallBit|unix.SYS_GETPID, 0, 0, 0)
	fmt.Printf("survived: r=%d errno=%s\n", r, errName(e))
}

func errName(e syscall.Errno) string {
	if e == 0 {
		return "OK"
	}
	return unix.ErrnoName(e)
}

// probe makes one real system call. Arguments are chosen so that the kernel, without the
// filter, answers something other than the filter's errno and changes nothing, where that
// is possible (see rootOnly).
type probe struct {
	name string
	call func() syscall.Errno
	want syscall.Errno // 0 = must reach the kernel and succeed or fail with another errno
	// rootOnly: an unprivileged kernel answers EPERM itself (capability check first), so
	// only a privileged control run can show the errno came from the filter.
	rootOnly bool
	// hostMayLack: the family or feature may be missing from the host kernel, which then
	// answers the filter's errno itself; the BPF VM test is the proof there.
	hostMayLack bool
	// reaches: for allowed calls, the errno the kernel itself gives (to prove it got there).
	reaches syscall.Errno
}

func raw(nr uintptr, a ...uintptr) func() syscall.Errno {
	return func() syscall.Errno {
		var x [6]uintptr
		copy(x[:], a)
		r, _, e := syscall.RawSyscall6(nr, x[0], x[1], x[2], x[3], x[4], x[5])
		if e == 0 && isFDSyscall(nr) {
			syscall.Close(int(r))
		}
		return e
	}
}

func isFDSyscall(nr uintptr) bool {
	switch nr {
	case unix.SYS_SOCKET, unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_USERFAULTFD, unix.SYS_PERF_EVENT_OPEN, unix.SYS_IO_URING_SETUP:
		return true
	}
	return false
}

func str(s string) uintptr {
	p, err := unix.BytePtrFromString(s)
	if err != nil {
		panic(err)
	}
	return uintptr(unsafe.Pointer(p))
}

const missing = "/nonexistent-anet-seccomp-test"

func probes() []probe {
	devnull, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0)
	if err != nil {
		panic(err)
	}
	null := uintptr(devnull)
	self := uintptr(os.Getpid())
	var c byte
	cp := uintptr(unsafe.Pointer(&c))
	neg1 := ^uintptr(0)
	ps := []probe{
		// Multi-threaded Go: an unfiltered unshare(CLONE_NEWUSER) gives EINVAL.
		{name: "unshare_newuser", call: raw(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), want: unix.EPERM},
		{name: "setns", call: raw(unix.SYS_SETNS, neg1, 0), want: unix.EPERM},
		// CLONE_FS with CLONE_NEWUSER (and CLONE_THREAD without CLONE_SIGHAND) are EINVAL in
		// copy_process before any fork, so a broken filter creates nothing.
		{name: "clone_newuser", call: raw(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS), want: unix.EPERM},
		{name: "clone_newnet", call: raw(unix.SYS_CLONE, unix.CLONE_NEWNET|unix.CLONE_THREAD), want: unix.EPERM},
		{name: "clone_newns", call: raw(unix.SYS_CLONE, unix.CLONE_NEWNS|unix.CLONE_FS), want: unix.EPERM},
		{name: "clone_plain_reaches_kernel", call: raw(unix.SYS_CLONE, unix.CLONE_THREAD), reaches: unix.EINVAL},
		{name: "clone3", call: raw(unix.SYS_CLONE3, 0, 0), want: unix.ENOSYS},
		{name: "mount", call: raw(unix.SYS_MOUNT, str("none"), str(missing), str("tmpfs"), 0, 0), want: unix.EPERM},
		{name: "umount2", call: raw(unix.SYS_UMOUNT2, str("/"), 0x80000000), want: unix.EPERM},
		{name: "pivot_root", call: raw(unix.SYS_PIVOT_ROOT, str(missing), str(missing)), want: unix.EPERM, rootOnly: true},
		{name: "chroot", call: raw(unix.SYS_CHROOT, str(missing)), want: unix.EPERM},
		{name: "open_tree", call: raw(unix.SYS_OPEN_TREE, neg1, str(missing), 0), want: unix.ENOSYS},
		{name: "move_mount", call: raw(unix.SYS_MOVE_MOUNT, neg1, str(""), neg1, str(""), 0), want: unix.ENOSYS},
		{name: "fsopen", call: raw(unix.SYS_FSOPEN, str("anet-no-such-fs"), 0), want: unix.ENOSYS},
		{name: "fsconfig", call: raw(unix.SYS_FSCONFIG, neg1, 0, 0, 0, 0), want: unix.ENOSYS},
		{name: "fsmount", call: raw(unix.SYS_FSMOUNT, neg1, 0, 0), want: unix.ENOSYS},
		{name: "fspick", call: raw(unix.SYS_FSPICK, neg1, str(""), 0), want: unix.ENOSYS},
		{name: "mount_setattr", call: raw(unix.SYS_MOUNT_SETATTR, neg1, str(""), 0, 0, 0), want: unix.ENOSYS},
		{name: "ptrace", call: raw(unix.SYS_PTRACE, 0xdead, self), want: unix.EPERM},
		{name: "process_vm_readv", call: raw(unix.SYS_PROCESS_VM_READV, self, 0, 0, 0, 0, 0), want: unix.EPERM},
		{name: "process_vm_writev", call: raw(unix.SYS_PROCESS_VM_WRITEV, self, 0, 0, 0, 0, 0), want: unix.EPERM},
		{name: "kcmp", call: raw(unix.SYS_KCMP, self, self, 0xdead, 0, 0), want: unix.EPERM},
		{name: "pidfd_getfd", call: raw(unix.SYS_PIDFD_GETFD, neg1, 0, 0), want: unix.EPERM},
		{name: "init_module", call: raw(unix.SYS_INIT_MODULE, 0, 0, str("")), want: unix.EPERM, rootOnly: true},
		{name: "finit_module", call: raw(unix.SYS_FINIT_MODULE, neg1, str(""), 0), want: unix.EPERM, rootOnly: true},
		{name: "delete_module", call: raw(unix.SYS_DELETE_MODULE, str("anet_no_such_module"), 0), want: unix.EPERM, rootOnly: true},
		{name: "kexec_load", call: raw(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0xdead0000), want: unix.EPERM, rootOnly: true},
		{name: "kexec_file_load", call: raw(unix.SYS_KEXEC_FILE_LOAD, neg1, neg1, 0, 0, 0xdead0000), want: unix.EPERM, rootOnly: true},
		{name: "io_uring_setup", call: raw(unix.SYS_IO_URING_SETUP, 0, 0), want: unix.EPERM},
		{name: "io_uring_enter", call: raw(unix.SYS_IO_URING_ENTER, neg1, 0, 0, 0, 0, 0), want: unix.EPERM},
		{name: "io_uring_register", call: raw(unix.SYS_IO_URING_REGISTER, neg1, 0, 0, 0), want: unix.EPERM},
		{name: "bpf", call: raw(unix.SYS_BPF, 0xdead, 0, 0), want: unix.EPERM},
		{name: "perf_event_open", call: raw(unix.SYS_PERF_EVENT_OPEN, 0, 0, neg1, neg1, 0), want: unix.EPERM},
		{name: "userfaultfd", call: raw(unix.SYS_USERFAULTFD, 1|0x4000), want: unix.EPERM},
		{name: "add_key", call: raw(unix.SYS_ADD_KEY, str("anet-no-such-type"), 0, 0, 0, 0), want: unix.EPERM},
		{name: "request_key", call: raw(unix.SYS_REQUEST_KEY, str("anet-no-such-type"), str("x"), 0, 0), want: unix.EPERM},
		{name: "keyctl", call: raw(unix.SYS_KEYCTL, 0xdead), want: unix.EPERM},
		{name: "acct", call: raw(unix.SYS_ACCT, str(missing)), want: unix.EPERM, rootOnly: true},
		{name: "quotactl", call: raw(unix.SYS_QUOTACTL, 0xdead00, 0, 0, 0), want: unix.EPERM},
		{name: "quotactl_fd", call: raw(unix.SYS_QUOTACTL_FD, neg1, 0, 0, 0), want: unix.EPERM},
		{name: "syslog", call: raw(unix.SYS_SYSLOG, 3, 0, neg1), want: unix.EPERM, rootOnly: true},
		{name: "swapon", call: raw(unix.SYS_SWAPON, str(missing), 0), want: unix.EPERM, rootOnly: true},
		{name: "swapoff", call: raw(unix.SYS_SWAPOFF, str(missing)), want: unix.EPERM, rootOnly: true},
		{name: "reboot", call: raw(unix.SYS_REBOOT, 0, 0, 0, 0), want: unix.EPERM, rootOnly: true},
		{name: "open_by_handle_at", call: raw(unix.SYS_OPEN_BY_HANDLE_AT, neg1, 0, 0), want: unix.EPERM, rootOnly: true},
		{name: "name_to_handle_at", call: raw(unix.SYS_NAME_TO_HANDLE_AT, neg1, str(missing), 0, 0, 0), want: unix.EPERM},
		{name: "fanotify_init", call: raw(unix.SYS_FANOTIFY_INIT, 0xdead0000, 0), want: unix.EPERM, rootOnly: true},
		{name: "sethostname", call: raw(unix.SYS_SETHOSTNAME, 0, neg1), want: unix.EPERM, rootOnly: true},
		{name: "setdomainname", call: raw(unix.SYS_SETDOMAINNAME, 0, neg1), want: unix.EPERM, rootOnly: true},
		{name: "mbind", call: raw(unix.SYS_MBIND, 0, 0, 0xdead, 0, 0, 0), want: unix.EPERM},
		{name: "move_pages", call: raw(unix.SYS_MOVE_PAGES, self, 0, 0, 0, 0, 0), want: unix.EPERM},
		{name: "migrate_pages", call: raw(unix.SYS_MIGRATE_PAGES, self, neg1, 0, 0), want: unix.EPERM},
		{name: "set_mempolicy", call: raw(unix.SYS_SET_MEMPOLICY, 0xdead, 0, 0), want: unix.EPERM},
		{name: "personality_PER_LINUX32", call: func() syscall.Errno {
			// Unfiltered, this succeeds; restore the persona so later probes run as usual.
			r, _, e := syscall.RawSyscall(unix.SYS_PERSONALITY, 0x0008, 0, 0)
			if e == 0 {
				syscall.RawSyscall(unix.SYS_PERSONALITY, r, 0, 0)
			}
			return e
		}, want: unix.EPERM},
		{name: "personality_query_allowed", call: raw(unix.SYS_PERSONALITY, 0xffffffff)},
		{name: "ioctl_TIOCSTI", call: raw(unix.SYS_IOCTL, null, unix.TIOCSTI, cp), want: unix.EPERM},
		{name: "ioctl_TIOCSTI_high_bits", call: raw(unix.SYS_IOCTL, null, 0xdead00000000|unix.TIOCSTI, cp), want: unix.EPERM},
		{name: "ioctl_TIOCLINUX", call: raw(unix.SYS_IOCTL, null, unix.TIOCLINUX, cp), want: unix.EPERM},
		{name: "ioctl_TCGETS_reaches_kernel", call: raw(unix.SYS_IOCTL, null, unix.TCGETS, cp), reaches: unix.ENOTTY},
		{name: "socket_AF_VSOCK", call: raw(unix.SYS_SOCKET, 40, unix.SOCK_STREAM, 0), want: unix.EAFNOSUPPORT},
		{name: "socket_AF_VSOCK_high_bits", call: raw(unix.SYS_SOCKET, 1<<32|40, unix.SOCK_STREAM, 0), want: unix.EAFNOSUPPORT},
		{name: "socket_AF_PACKET", call: raw(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_DGRAM, 0), want: unix.EAFNOSUPPORT},
		{name: "socket_AF_ALG", call: raw(unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET, 0), want: unix.EAFNOSUPPORT, hostMayLack: true},
		{name: "socket_AF_NETLINK", call: raw(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), want: unix.EAFNOSUPPORT},
		{name: "socketpair_AF_NETLINK", call: raw(unix.SYS_SOCKETPAIR, unix.AF_NETLINK, unix.SOCK_RAW, 0, 0), want: unix.EAFNOSUPPORT},
		{name: "socket_AF_INET_allowed", call: raw(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)},
		{name: "socket_AF_INET6_high_bits_allowed", call: raw(unix.SYS_SOCKET, 1<<32|unix.AF_INET6, unix.SOCK_DGRAM, 0)},
		{name: "socket_AF_UNIX_allowed", call: raw(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)},
		{name: "exec_true_allowed", call: func() syscall.Errno {
			// Go's os/exec (clone with CLONE_VFORK|CLONE_VM|CLONE_PIDFD, execve, wait4) must work.
			if err := exec.Command("/bin/true").Run(); err != nil {
				var e syscall.Errno
				if errors.As(err, &e) {
					return e
				}
				return unix.EIO
			}
			return 0
		}},
	}
	return append(ps, archProbes()...)
}

func runProbes() {
	out := map[string]string{}
	for _, p := range probes() {
		out[p.name] = errName(p.call())
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

// child re-executes the test binary in role and returns its stdout and wait status.
func child(t *testing.T, role string) (string, syscall.WaitStatus) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", role, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("child %s did not finish within 60 s; stderr: %s", role, stderr.String())
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Exited() && ws.ExitStatus() == 3 {
		t.Fatalf("child %s could not install the filters: %s", role, stderr.String())
	}
	return stdout.String(), ws
}

func probeResults(t *testing.T, role string) map[string]string {
	t.Helper()
	out, ws := child(t, role)
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("child %s ended with %v; stdout: %s", role, ws, out)
	}
	res := map[string]string{}
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&res); err != nil && err != io.EOF {
		t.Fatalf("child %s output %q: %v", role, out, err)
	}
	return res
}

// TestKernelFilters installs both programs in a re-executed child (NO_NEW_PRIVS + seccomp(2))
// and checks that real system calls get the filter's errno, while a control child without
// filters gets something else, so the errno is known to come from the filter (S4, L1).
func TestKernelFilters(t *testing.T) {
	filtered := probeResults(t, "probes-filtered")
	plain := probeResults(t, "probes-plain")
	root := os.Geteuid() == 0
	for _, p := range probes() {
		t.Run(p.name, func(t *testing.T) {
			got, ok := filtered[p.name]
			if !ok {
				t.Fatalf("no result for %s from the filtered child", p.name)
			}
			switch {
			case p.want != 0:
				if want := unix.ErrnoName(p.want); got != want {
					t.Errorf("filtered %s = %s, want %s", p.name, got, want)
				}
				if p.hostMayLack && plain[p.name] == got {
					t.Logf("the host kernel lacks %s (%s unfiltered): only TestMainFilterVM proves this rule here", p.name, got)
				} else if (root || !p.rootOnly) && plain[p.name] == got {
					t.Errorf("unfiltered %s = %s too: the probe cannot tell the filter from the kernel", p.name, plain[p.name])
				}
			case p.reaches != 0:
				if want := unix.ErrnoName(p.reaches); got != want || plain[p.name] != want {
					t.Errorf("%s = %s filtered, %s unfiltered; want %s from the kernel both times", p.name, got, plain[p.name], want)
				}
			default:
				if got != "OK" {
					t.Errorf("filtered %s = %s, want OK (allowed)", p.name, got)
				}
			}
		})
	}
}
