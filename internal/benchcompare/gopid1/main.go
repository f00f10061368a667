//go:build linux

// Command gopid1 is the smallest pid 1 a Go program can be: it starts its arguments as a
// child, reaps, and exits with the child's status. `make bench-compare` runs it in hardened
// bwrap to show what any init written in Go costs a launch before it does anything (the Go
// runtime's own start), next to the node's launch and bwrap's own C pid 1.
package main

import (
	"os"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(126)
	}
	argv := os.Args[1:]
	child, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}})
	if err != nil {
		os.Exit(127)
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			os.Exit(126)
		}
		if pid == child {
			if ws.Signaled() {
				os.Exit(128 + int(ws.Signal()))
			}
			os.Exit(ws.ExitStatus())
		}
	}
}
