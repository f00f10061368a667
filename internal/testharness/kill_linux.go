package testharness

import "syscall"

func killPid(pid int) { syscall.Kill(pid, syscall.SIGKILL) }
