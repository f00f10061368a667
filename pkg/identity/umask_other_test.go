//go:build !unix

package identity

func syscallUmask(m int) int { return 0 }
