package seatbelt

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Calls into libSystem without cgo (dist tarballs are cross-compiled with CGO_ENABLED=0), the
// way golang.org/x/sys/unix binds libc on darwin: a dynamic import, an assembly trampoline
// that jumps to it (libsystem_darwin_*.s), and the runtime's syscall6, which makes the call
// on the system stack in the C calling convention. syscall6 calls any C function address,
// so one found with dlsym is called the same way.
//
// sandbox_check(3) is libsystem_sandbox's question "would the sandbox of pid allow this
// operation?": the kernel evaluates the process's own profile and nothing is attempted, so
// asking costs nothing even where the answer is "allowed". Its declaration and the filter
// numbers are not in the public SDK; they are as WebKit's Source/WTF/wtf/spi/darwin/SandboxSPI.h
// declares them (int sandbox_check(pid_t, const char *operation, enum sandbox_filter_type,
// ...); SANDBOX_FILTER_NONE = 0, SANDBOX_FILTER_GLOBAL_NAME = 2) and as LLVM's compiler-rt and
// dyld use them. SANDBOX_CHECK_NO_REPORT, the flag that keeps a denied check out of the
// unified log, is an exported constant there ("extern const enum sandbox_filter_type"), not a
// literal, so it is read from libSystem with dlsym; without it the check still answers, only
// with a log line. Variadic arguments go on the stack on darwin/arm64: the runtime's
// syscall6 puts its fourth argument there too, which is exactly sandbox_check's one variadic
// argument (runtime/sys_darwin_arm64.s, syscallN_trampoline).
//
// __proc_info is the system call under libproc's proc_pidpath: called directly it returns -1
// with errno (proc_pidpath returns 0 and leaves errno to a later call, which syscall6 cannot
// read), so a refusal shows as EPERM. PROC_INFO_CALL_PIDINFO and PROC_PIDPATHINFO are from
// xnu's bsd/sys/proc_info.h.

//go:linkname syscall_syscall6 syscall.syscall6
func syscall_syscall6(fn, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, err syscall.Errno)

var libc_dlsym_trampoline_addr uintptr

//go:cgo_import_dynamic libc_dlsym dlsym "/usr/lib/libSystem.B.dylib"

// sandbox_check and __proc_info are looked up with dlsym when first asked for, not bound at
// load as dlsym and ptsname are: neither is in the public SDK, and a dynamic import of a
// symbol some macOS no longer exports would stop dyld from starting anet-sandboxd at all.
// Looked up, a missing one fails only the self-check item that asks, closed.
var libSystem struct {
	once                   sync.Once
	sandboxCheck, procInfo uintptr
	noReport               uintptr // SANDBOX_CHECK_NO_REPORT's value, or 0
}

func loadLibSystem() {
	libSystem.once.Do(func() {
		libSystem.sandboxCheck = dlsym("sandbox_check")
		libSystem.procInfo = dlsym("__proc_info")
		if p := dlsym("SANDBOX_CHECK_NO_REPORT"); p != 0 {
			libSystem.noReport = uintptr(*(*uint32)(cPointer(p)))
		}
	})
}

// dlsym is the address of libSystem's exported name, or 0.
func dlsym(name string) uintptr {
	n, err := syscall.BytePtrFromString(name)
	if err != nil {
		return 0
	}
	p, _, _ := syscall_syscall6(libc_dlsym_trampoline_addr, rtldDefault, uintptr(unsafe.Pointer(n)), 0, 0, 0, 0)
	runtime.KeepAlive(n)
	return p
}

const (
	rtldDefault = ^uintptr(1) // RTLD_DEFAULT, ((void *)-2) in <dlfcn.h>

	procInfoCallPIDInfo = 2    // PROC_INFO_CALL_PIDINFO
	procPIDPathInfo     = 11   // PROC_PIDPATHINFO
	procPIDPathMax      = 4096 // PROC_PIDPATHINFO_MAXSIZE, 4 * MAXPATHLEN
)

// cPointer is an address libSystem returned: memory outside Go's heap, which the garbage
// collector never moves or frees.
func cPointer(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// sandboxCheck asks the kernel whether this process's sandbox denies a: true for denied,
// false for allowed.
func sandboxCheck(a Ask) (bool, error) {
	o, err := syscall.BytePtrFromString(a.Op)
	if err != nil {
		return false, err
	}
	var n *byte
	arg := uintptr(0)
	if a.Filter != filterNone {
		if n, err = syscall.BytePtrFromString(a.Arg); err != nil {
			return false, err
		}
		arg = uintptr(unsafe.Pointer(n))
	}
	loadLibSystem()
	if libSystem.sandboxCheck == 0 {
		return false, fmt.Errorf("sandbox_check(%s): libSystem exports no sandbox_check", a)
	}
	r, _, e := syscall_syscall6(libSystem.sandboxCheck, uintptr(syscall.Getpid()),
		uintptr(unsafe.Pointer(o)), uintptr(a.Filter)|libSystem.noReport, arg, 0, 0)
	runtime.KeepAlive(n) // arg carries it as a plain number
	switch int32(r) {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, fmt.Errorf("sandbox_check(%s) = %d: %w", a, int32(r), e)
}

// procPath is what proc_pidpath(3) gives for pid: its program's path, or the refusal.
func procPath(pid int) (string, error) {
	loadLibSystem()
	if libSystem.procInfo == 0 {
		return "", fmt.Errorf("proc_info pid %d path: libSystem exports no __proc_info", pid)
	}
	buf := make([]byte, procPIDPathMax)
	r, _, e := syscall_syscall6(libSystem.procInfo, procInfoCallPIDInfo, uintptr(pid), procPIDPathInfo, 0,
		uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if int32(r) == -1 {
		return "", fmt.Errorf("proc_info pid %d path: %w", pid, e)
	}
	for i, b := range buf {
		if b == 0 {
			return string(buf[:i]), nil
		}
	}
	return string(buf), nil
}

// systemLookup resolves as macOS programs do: net's default resolver on darwin is libSystem's
// getaddrinfo, which asks mDNSResponder.
var systemLookup = net.DefaultResolver.LookupHost

var libc_ptsname_trampoline_addr uintptr

//go:cgo_import_dynamic libc_ptsname ptsname "/usr/lib/libSystem.B.dylib"

// openDecoyTTY opens a pseudo-terminal whose slave the run did not open: the master stays
// with the host, the slave's path goes to the check. ptsname(3) is libc's; its static buffer
// is read before anything else in this process could call it.
func openDecoyTTY() (*os.File, string, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, "", fmt.Errorf("decoy terminal: %w", err)
	}
	fd := int(m.Fd())
	for _, req := range []uint{unix.TIOCPTYGRANT, unix.TIOCPTYUNLK} {
		if err := unix.IoctlSetInt(fd, req, 0); err != nil {
			m.Close()
			return nil, "", fmt.Errorf("decoy terminal: ioctl %#x: %w", req, err)
		}
	}
	p, _, e := syscall_syscall6(libc_ptsname_trampoline_addr, uintptr(fd), 0, 0, 0, 0, 0)
	if p == 0 {
		m.Close()
		return nil, "", fmt.Errorf("decoy terminal: ptsname: %w", e)
	}
	name := unix.BytePtrToString((*byte)(cPointer(p)))
	runtime.KeepAlive(m)
	return m, name, nil
}

// ttyPattern names the terminal slaves of this host's users.
var ttyPattern = regexp.MustCompile(`^/dev/ttys[0-9]+$`)

const ttyGlob = "/dev/ttys*"
