//go:build darwin || freebsd

package control

import "golang.org/x/sys/unix"

// socketPeer returns the uid of the process at the other end of a unix socket, as the kernel
// recorded it at connect (LOCAL_PEERCRED, what getpeereid(3) reads). The pid is only for the
// log line and is not read here (0).
func socketPeer(fd int) (uid, pid int, err error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, 0, err
	}
	return int(cred.Uid), 0, nil
}
