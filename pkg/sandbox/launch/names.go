package launch

import (
	"crypto/rand"
	"encoding/hex"
	"net"
)

// RandomName returns prefix and n random bytes in hex: the names of probe and self-test runs
// and of their canaries, which no other process can guess or take first.
func RandomName(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// DrainListener accepts and closes connections until ln is closed: a canary that must exist
// for an attack to aim at, and answers nothing.
func DrainListener(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		conn.Close()
	}
}
