package testkit

import "net"

// Serve accepts connections on ln until ln is closed, and hands each to handle in its own
// goroutine; the connection is closed when handle returns. It returns at once.
func Serve(ln net.Listener, handle func(net.Conn)) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}
