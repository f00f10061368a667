//go:build unix

package agents

import "syscall"

// oNoFollow makes the open itself refuse a link or block on no FIFO, should the name change
// between the Lstat and the open (the caller reads after the run's processes are gone).
const oNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
