//go:build unix

package identity

import "syscall"

func syscallUmask(m int) int { return syscall.Umask(m) }
