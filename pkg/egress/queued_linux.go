package egress

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitQueued blocks until c is readable (honouring its read deadline) and returns how many
// bytes the kernel holds for it: 0 means EOF. ok is false when c is not a kernel socket, and
// the caller must copy through a buffer instead.
//
// Knowing the count lets the copy reserve only bytes that are already there, so a splice
// never waits for data while holding part of the run's byte allowance.
func waitQueued(c net.Conn) (n int, ok bool, err error) {
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return 0, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	var opErr error
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		m, _, e := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case e == unix.EAGAIN || e == unix.EINTR:
			return false // wait for the poller
		case e != nil:
			opErr = e
			return true
		case m == 0:
			n = 0 // orderly shutdown by the peer
			return true
		}
		q, e := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		if e != nil {
			opErr = e
			return true
		}
		n = max(q, 1)
		return true
	})
	if err != nil {
		return 0, true, err
	}
	return n, true, opErr
}
