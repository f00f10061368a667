package privsep

import "golang.org/x/sys/unix"

// platformSocketType: Linux keeps message boundaries in the kernel (SOCK_SEQPACKET).
const platformSocketType = unix.SOCK_SEQPACKET

const (
	// recvFlags: received descriptors are close-on-exec from the moment they exist.
	recvFlags = unix.MSG_CMSG_CLOEXEC
	// sendFlags: a closed peer is an EPIPE error, never a signal.
	sendFlags = unix.MSG_NOSIGNAL
)

func cloexecSocketpair(typ int) ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
}

// CloseOnExecFrom marks every descriptor from fd up close-on-exec, so that nothing this
// process inherited without the flag (from a shell, make's jobserver, a test runner) crosses
// into a program it starts; those pass only what they name.
func CloseOnExecFrom(fd int) error {
	return unix.CloseRange(uint(fd), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}
