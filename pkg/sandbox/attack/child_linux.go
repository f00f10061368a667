package attack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childReport is what a child prints on stdout (one JSON object) when it survives.
type childReport struct {
	Errno  string `json:"errno"` // "" when the call succeeded
	Detail string `json:"detail,omitempty"`
}

// ChildMain runs child attack NAME in this process and returns the exit status. The binary
// that embeds the battery must call it, before anything else, when started as
// `… attack --child NAME` (Env.ChildArgv + NAME); for anet-sandboxd that is the hidden
// `attack` subcommand:
//
//	if len(args) == 2 && args[0] == attack.ChildFlag { os.Exit(attack.ChildMain(args[1], os.Stdout)) }
//
// The child makes its one dangerous call and prints a childReport; if the sandbox kills it,
// the parent sees the signal instead.
func ChildMain(name string, stdout io.Writer) int {
	var rep childReport
	switch name {
	case "noop":
		return 0
	case "x32":
		rep = x32Call()
	case "int80":
		rep = int80Call()
	case "tiocsti":
		rep = tiocstiCall(ioctlTIOCSTI)
	case "tiocsti_highbits":
		rep = tiocstiCall(0xdead<<32 | ioctlTIOCSTI)
	case "ptrace_pid1":
		// PTRACE_SEIZE, unlike PTRACE_ATTACH, does not stop the tracee; this process exits
		// at once, which detaches. The filter denies every ptrace request alike.
		rep = report(unix.PtraceSeize(1), "PTRACE_SEIZE pid 1")
	default:
		json.NewEncoder(stdout).Encode(childReport{Errno: "EINVAL", Detail: "unknown child attack " + strconv.Quote(name)})
		return 2
	}
	json.NewEncoder(stdout).Encode(rep)
	return 0
}

const ioctlTIOCSTI = 0x5412

func report(err error, what string) childReport {
	if err == nil {
		return childReport{Detail: what + " succeeded"}
	}
	if e, ok := errnoOf(err); ok {
		return childReport{Errno: errnoName(e), Detail: what}
	}
	return childReport{Errno: "error", Detail: fmt.Sprintf("%s: %v", what, err)}
}

// x32Call makes getpid through the x32 ABI (nr | 0x40000000).
func x32Call() childReport {
	if runtime.GOARCH != "amd64" {
		return childReport{Errno: "not applicable", Detail: "x32 exists only on x86_64"}
	}
	pid, _, e := syscall.RawSyscall(0x40000000|unix.SYS_GETPID, 0, 0, 0)
	if e != 0 {
		return childReport{Errno: errnoName(e), Detail: "x32 getpid"}
	}
	return childReport{Detail: fmt.Sprintf("x32 getpid returned %d", pid)}
}

// int80Call makes the i386 keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING) through
// `int $0x80`: a call the main filter denies natively, so surviving it shows the foreign-ABI
// gap the arch filter closes (pkg/sandbox/seccomp, pitfall 2).
func int80Call() childReport {
	const i386Keyctl, keyctlGetKeyringID, keySpecSession = 288, 0, 0xfffffffd
	r, ok := int80(i386Keyctl, keyctlGetKeyringID, keySpecSession, 0)
	if !ok {
		return childReport{Errno: "not applicable", Detail: "int 0x80 exists only on x86_64"}
	}
	if n := int32(r); n < 0 && n > -4096 {
		return childReport{Errno: errnoName(syscall.Errno(-n)), Detail: "i386 keyctl through int 0x80"}
	}
	return childReport{Detail: fmt.Sprintf("i386 keyctl through int 0x80 returned keyring %d", int32(r))}
}

// tiocstiCall pushes a byte into the input of this process's controlling terminal (fd 0, a
// pty the parent made, acquired with setsid + TIOCSCTTY). Without the filter the kernel
// allows it (legacy_tiocsti=1, or CAP_SYS_ADMIN) or answers EIO (legacy_tiocsti=0): only
// the filter answers EPERM here.
func tiocstiCall(req uint64) childReport {
	c := byte('#')
	_, _, e := syscall.RawSyscall(unix.SYS_IOCTL, 0, uintptr(req), uintptr(unsafe.Pointer(&c)))
	what := fmt.Sprintf("ioctl(ctty, %#x)", req)
	if e != 0 {
		return childReport{Errno: errnoName(e), Detail: what}
	}
	return childReport{Detail: what + " injected a byte into the terminal"}
}

// childAttack runs child attack name and interprets how it ended.
func childAttack(name string) func(Env) Result {
	return func(env Env) Result {
		var attr *syscall.SysProcAttr
		var stdin *os.File
		if name == "tiocsti" || name == "tiocsti_highbits" {
			master, slave, err := openPty()
			if err != nil {
				return notBlocked("error", fmt.Sprintf("open a pty for the TIOCSTI child: %v", err))
			}
			defer master.Close()
			defer slave.Close()
			stdin = slave
			attr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		}
		rep, ws, err := runChild(env, name, stdin, attr)
		if err != nil {
			return notBlocked("error", err.Error())
		}
		return judgeChild(name, rep, ws)
	}
}

func judgeChild(name string, rep childReport, ws syscall.WaitStatus) Result {
	if ws.Signaled() {
		sig := ws.Signal()
		switch {
		case sig == syscall.SIGSYS:
			return blocked("signal SIGSYS", "the arch filter killed the process")
		case name == "int80" && sig == syscall.SIGSEGV:
			// A kernel without IA32 emulation faults on int 0x80: nothing to reach.
			return blocked("signal SIGSEGV", "int 0x80 faulted: IA32 emulation is off in this kernel; the arch filter was not exercised")
		}
		return notBlocked("signal "+unix.SignalName(sig), "child died of an unexpected signal")
	}
	if rep.Errno == "not applicable" {
		return blocked("not applicable", rep.Detail)
	}
	var want []string
	switch name {
	case "x32":
		// The arch filter kills; a kernel with x32 disabled (or the main filter alone) says ENOSYS.
		want = []string{"ENOSYS"}
	case "int80":
		want = nil // surviving int 0x80 at all is the hole
	default:
		want = []string{"EPERM"}
	}
	if rep.Errno == "" {
		return notBlocked("succeeded", rep.Detail)
	}
	for _, w := range want {
		if rep.Errno == w {
			return blocked(rep.Errno, rep.Detail)
		}
	}
	if name == "int80" {
		return notBlocked(rep.Errno, rep.Detail+": the i386 call reached the kernel")
	}
	return notBlocked(rep.Errno, fmt.Sprintf("%s failed with %s, not %v: something else stopped it", rep.Detail, rep.Errno, want))
}

// runChild re-executes Env.ChildArgv + name and collects its report and wait status.
func runChild(env Env, name string, stdin *os.File, attr *syscall.SysProcAttr) (childReport, syscall.WaitStatus, error) {
	var rep childReport
	ctx, cancel := context.WithTimeout(context.Background(), env.timeout())
	defer cancel()
	argv := append(append([]string{}, env.childArgv()...), name)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{}
	cmd.Stdin = stdin
	cmd.SysProcAttr = attr
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return rep, 0, fmt.Errorf("child %s did not finish within %s", name, env.timeout())
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return rep, 0, fmt.Errorf("start child %s: %v", name, err)
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return rep, ws, nil
	}
	if ws.ExitStatus() != 0 {
		return rep, ws, fmt.Errorf("child %s exited %d: %s%s", name, ws.ExitStatus(), stdout.Bytes(), stderr.Bytes())
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &rep); err != nil {
		return rep, ws, fmt.Errorf("child %s printed %q: %v", name, stdout.String(), err)
	}
	return rep, ws, nil
}

// openPty opens a new pty pair; the slave is opened through the master (TIOCGPTPEER), so no
// /dev/pts path lookup is needed.
func openPty() (master, slave *os.File, err error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(m), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	s, _, e := syscall.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if e != 0 {
		master.Close()
		return nil, nil, fmt.Errorf("open pty peer: %w", e)
	}
	return master, os.NewFile(s, "pty-slave"), nil
}
