package control

import "golang.org/x/sys/unix"

// socketPeer returns the uid and pid of the process at the other end of a unix socket,
// as the kernel recorded them at connect (SO_PEERCRED).
func socketPeer(fd int) (uid, pid int, err error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, 0, err
	}
	return int(cred.Uid), int(cred.Pid), nil
}
