//go:build linux && !amd64

package seccomp

func archProbes() []probe { return nil }
