package vm

import (
	"io"
	"net"
)

// join copies both ways between a and b until both directions end, half-closing each side
// when its source ends (an HTTP/1.0 body or a CONNECT tunnel may still be answering), then
// closes both. It holds nothing and checks nothing: the endpoint does.
func join(a, b net.Conn) {
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go pipe(a, b)
	go pipe(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}
