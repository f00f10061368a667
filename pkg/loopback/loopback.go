// Package loopback listens on one port of both loopback addresses. A run that shares the
// host's loopback (a Seatbelt run, whose profile names "localhost:PORT") may send to
// 127.0.0.1:PORT and to [::1]:PORT alike; the node serves the first and must hold the second,
// or any local program could listen there and receive what the run sends (M1, S2).
package loopback

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// Pair is 127.0.0.1:Port, which its owner serves, and [::1] on the same port, held and
// answering nothing (every connection is closed at once). Held is nil when the host has no
// IPv6 loopback: then nobody can listen there either.
type Pair struct {
	Listener net.Listener
	Held     net.Listener
	Port     int
}

// tries bounds the search for a port free on both addresses.
const tries = 8

// listenV4 takes an ephemeral port of 127.0.0.1; a test hands out a chosen one.
var listenV4 = func() (net.Listener, error) { return net.Listen("tcp4", "127.0.0.1:0") }

// Listen returns a Pair on an ephemeral port. A port whose ::1 side another program holds is
// given back and another taken.
func Listen() (*Pair, error) {
	var last error
	for range tries {
		v4, err := listenV4()
		if err != nil {
			return nil, fmt.Errorf("listen 127.0.0.1:0: %w", err)
		}
		port := v4.Addr().(*net.TCPAddr).Port
		v6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
		switch {
		case err == nil:
			go refuseAll(v6)
			return &Pair{Listener: v4, Held: v6, Port: port}, nil
		case errors.Is(err, syscall.EADDRINUSE):
			v4.Close()
			last = err
			continue
		}
		// Any other error: the host has no IPv6 loopback (EADDRNOTAVAIL, EAFNOSUPPORT).
		return &Pair{Listener: v4, Port: port}, nil
	}
	return nil, fmt.Errorf("listen on 127.0.0.1 and ::1 with one port (%d tries): %w", tries, last)
}

// Close closes both listeners.
func (p *Pair) Close() error {
	err := p.Listener.Close()
	if p.Held != nil {
		p.Held.Close()
	}
	return err
}

// CloseHeld closes the ::1 side only, for an owner whose Listener listener another closes (an
// http.Server it was handed to).
func (p *Pair) CloseHeld() {
	if p.Held != nil {
		p.Held.Close()
	}
}

// refuseAll accepts and closes every connection until ln is closed.
func refuseAll(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
