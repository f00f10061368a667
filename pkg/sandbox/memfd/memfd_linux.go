package memfd

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Sealed returns a memfd holding data, sealed against every change (write, shrink,
// grow, further seals) and positioned at offset 0. The launcher hands such fds to bwrap
// (seccomp programs, the run's env file), which reads them to EOF: the seals mean nothing
// that shares the fd can change the content between this call and bwrap's read.
func Sealed(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd %s: memfd_create: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	fail := func(op string, err error) (*os.File, error) {
		f.Close()
		return nil, fmt.Errorf("memfd %s: %s: %w", name, op, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("write", err)
	}
	seals := unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fail("seal", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail("seek", err)
	}
	return f, nil
}

// New returns an empty memfd for a child to write into (a run's stdout and stderr); the
// caller reads it back. It lives in memory only and vanishes with its last descriptor.
func New(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}
