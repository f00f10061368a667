//go:build !unix

package store

func umask(m int) int { return 0 }
