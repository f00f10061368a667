//go:build unix && !linux

package privsep

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// platformSocketType: macOS has no AF_UNIX SOCK_SEQPACKET; a stream with length framing
// carries the same messages (see the package comment).
const platformSocketType = unix.SOCK_STREAM

// No MSG_CMSG_CLOEXEC here: parseRights sets close-on-exec on each received descriptor. No
// MSG_NOSIGNAL either: the Go runtime turns SIGPIPE on a socket into an EPIPE error.
const (
	recvFlags = 0
	sendFlags = 0
)

// cloexecSocketpair creates the pair and sets close-on-exec under the fork lock, so no child
// started in between inherits either end (macOS has no SOCK_CLOEXEC).
func cloexecSocketpair(typ int) ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, typ, 0)
	if err != nil {
		return fds, err
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	return fds, nil
}

// maxInheritedFD bounds the scan below when the descriptor limit is huge.
const maxInheritedFD = 1 << 16

// CloseOnExecFrom marks every descriptor from fd up close-on-exec (see the Linux version).
// Without close_range, each descriptor number below the soft RLIMIT_NOFILE is marked; numbers
// that are not open fail with EBADF, which is ignored.
func CloseOnExecFrom(fd int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	// Cur is unsigned on macOS and signed on FreeBSD.
	end := min(uint64(lim.Cur), maxInheritedFD)
	for i := uint64(fd); i < end; i++ {
		_, _ = unix.FcntlInt(uintptr(i), unix.F_SETFD, unix.FD_CLOEXEC)
	}
	return nil
}
