//go:build linux && amd64

package seccomp

import (
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// archProbes are the x86-only names of the deny list.
func archProbes() []probe {
	return []probe{
		{name: "iopl", call: raw(unix.SYS_IOPL, 4), want: unix.EPERM},
		{name: "ioperm", call: raw(unix.SYS_IOPERM, 0, 0, 1), want: unix.EPERM},
		{name: "uselib", call: raw(unix.SYS_USELIB, str(missing)), want: unix.EPERM},
	}
}

// TestKernelX32Killed proves an x32 call kills the filtered process with SIGSYS (S4).
func TestKernelX32Killed(t *testing.T) {
	out, ws := child(t, "x32-filtered")
	if !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Errorf("filtered x32 getpid ended with %v (stdout %q), want killed by SIGSYS", ws, out)
	}
	// Control: without the filter the process survives (ENOSYS when the kernel has x32 off).
	out, ws = child(t, "x32-plain")
	if !ws.Exited() || !strings.HasPrefix(out, "survived") {
		t.Errorf("unfiltered x32 getpid ended with %v (stdout %q), want it to survive", ws, out)
	}
}
