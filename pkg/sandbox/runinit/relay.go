package runinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Upstream opens one stream to the run's endpoint for each connection the agent makes to the
// loopback port. In a bwrap sandbox it is the endpoint socket bound in (UnixSocket); a VM
// guest's is a vsock or virtio-serial stream to the host. A stream that can half-close
// (CloseWrite) keeps each direction open until its own EOF.
type Upstream interface {
	Open(ctx context.Context) (net.Conn, error)
}

// UnixSocket is an endpoint socket at a path: the one bwrap binds at
// sandbox.SandboxEndpoint.
type UnixSocket string

// Open implements Upstream.
func (p UnixSocket) Open(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", string(p))
}

// ListenLoopback listens on 127.0.0.1:port, the address agents are configured to reach. The
// listener is plain TCP: Go's default Multipath TCP listener adds nothing on a loopback and
// costs every run's init two probe sockets before its agent starts.
func ListenLoopback(port int) (net.Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listen 127.0.0.1:%d: %w", port, err)
	}
	return ln, nil
}

// Relay accepts loopback connections on ln and joins each to a fresh stream from up, until
// ln is closed. It holds no rule: whatever arrives is relayed, and the endpoint judges it.
func Relay(ln net.Listener, up Upstream, logf func(string, ...any)) {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			if !errors.Is(err, net.ErrClosed) { // closing ln is how a relay is stopped
				logf("accept: %v", err)
			}
			return
		}
		delay = 0
		go Join(c, up, logf)
	}
}

// Join relays c to a fresh stream from up, both ways, until both directions have ended, and
// closes both. Relay joins each loopback connection so; a micro-VM's host side joins each
// endpoint stream its guest opens to the endpoint socket the same way.
func Join(c net.Conn, up Upstream, logf func(string, ...any)) {
	defer c.Close()
	u, err := up.Open(context.Background())
	if err != nil {
		logf("open a stream to the endpoint: %v", err)
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Half-close: the other direction may still be answering (HTTP/1.0 bodies, CONNECT).
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	<-done
}
