package seccomp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/sandbox/memfd"
)

// WriteMemfd returns a sealed memfd holding prog, positioned at offset 0. Pass it to bwrap
// through exec.Cmd.ExtraFiles with `--add-seccomp-fd N`; bwrap reads it to EOF. The seals
// (write, shrink, grow, seal) mean nothing that shares the fd can change the program between
// this call and bwrap's read.
func WriteMemfd(prog []byte) (*os.File, error) {
	if _, err := decode(prog); err != nil {
		return nil, fmt.Errorf("seccomp memfd: %w", err)
	}
	f, err := memfd.Sealed("anet-seccomp", prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp program: %w", err)
	}
	return f, nil
}

// Install sets NO_NEW_PRIVS and loads progs into the calling process, all threads
// (SECCOMP_FILTER_FLAG_TSYNC). It is irreversible. The launcher does not use it (bwrap
// installs the filters); the kernel tests and in-process self-checks do.
func Install(progs [][]byte) error {
	if len(progs) == 0 {
		return errors.New("seccomp install: no programs")
	}
	filters := make([][]unix.SockFilter, len(progs))
	for i, p := range progs {
		raw, err := decode(p)
		if err != nil {
			return fmt.Errorf("seccomp install: program %d: %w", i, err)
		}
		filters[i] = make([]unix.SockFilter, len(raw))
		for j, r := range raw {
			filters[i][j] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
		}
	}
	// NO_NEW_PRIVS is per thread; TSYNC copies it with the filter to every other thread,
	// but the calling thread must be the one that set it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp install: no_new_privs: %w", err)
	}
	for i, f := range filters {
		fprog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
		tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
			unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
		runtime.KeepAlive(f)
		if errno != 0 {
			return fmt.Errorf("seccomp install: program %d: %w", i, errno)
		}
		if tid != 0 {
			// TSYNC reports the thread it could not synchronise instead of an errno.
			return fmt.Errorf("seccomp install: program %d: thread %d could not be synchronised", i, tid)
		}
	}
	return nil
}
