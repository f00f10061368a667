//go:build darwin || freebsd

package main

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's attributes; it fails on anything that is not a terminal.
const ioctlGetTermios = unix.TIOCGETA
