package endpoint

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// limitListener admits at most max connections at once (R1). The next one gets a short
// HTTP answer naming the limit and is closed, so the agent learns why. It also tracks every
// admitted connection, hijacked tunnels included, so that Close can end them all.
type limitListener struct {
	net.Listener
	sem     chan struct{}
	refused atomic.Int64
	total   atomic.Int64

	mu     sync.Mutex // guards conns and closed
	conns  map[*limitConn]struct{}
	closed bool
}

func newLimitListener(l net.Listener, max int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, max), conns: map[*limitConn]struct{}{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
		default:
			l.refused.Add(1)
			go refuseConn(c, cap(l.sem))
			continue
		}
		lc := &limitConn{Conn: c, l: l}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			<-l.sem
			return nil, net.ErrClosed
		}
		l.conns[lc] = struct{}{}
		l.mu.Unlock()
		l.total.Add(1)
		return lc, nil
	}
}

// closeAll ends every admitted connection.
func (l *limitListener) closeAll() {
	l.mu.Lock()
	l.closed = true
	cs := make([]*limitConn, 0, len(l.conns))
	for c := range l.conns {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// refuseConn answers an over-limit connection and closes it. It half-closes first and drains
// what the client sends for a moment, so a client that writes its request after our answer
// reads the answer instead of failing with a broken pipe.
func refuseConn(c net.Conn, max int) {
	defer c.Close()
	msg := fmt.Sprintf("anet: %s (limit %d)\n", reasons.Text(ConnectionLimit), max)
	c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nX-Anet-Reason: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", ConnectionLimit, len(msg), msg)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

// NetConn exposes the socket under the wrapper, so the egress tunnel can keep its zero-copy
// splice path; closing still goes through Close, which frees the connection's slot.
func (c *limitConn) NetConn() net.Conn { return c.Conn }

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.sem
	})
	return err
}
