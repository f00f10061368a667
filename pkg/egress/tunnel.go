package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
)

// maxChunk bounds one zero-copy transfer; each transfer re-arms the idle deadline and
// settles the run's byte budget.
const maxChunk = 1 << 20

const (
	dirSent     = 0 // agent → upstream
	dirReceived = 1 // upstream → agent
)

// tunnel is one open CONNECT tunnel.
type tunnel struct {
	p        *Proxy
	host     string
	addrs    []netip.Addr // resolved and checked (H5); dialled after the hello passes
	budget   time.Duration
	client   net.Conn // as hijacked: closing it releases the endpoint's connection slot
	clientIO net.Conn // the socket under client, for data (keeps the splice path)
	ctx      context.Context
	cancel   context.CancelFunc // ends a dial in progress when the tunnel is closed

	mu       sync.Mutex // guards upstream, addr and closed
	upstream net.Conn   // nil until the dial succeeds
	addr     netip.AddrPort
	closed   bool

	closeOnce sync.Once
	idle      [2]atomic.Bool // the direction's last transfer window moved no byte
	done      [2]atomic.Bool // the direction has ended (EOF, error or limit)
	moved     [2]atomic.Int64
	endMu     sync.Mutex
	ended     bool
	endCode   reasons.Code // why the tunnel was ended first; "" when not for a refusal
	endDetail string
	// rc is the CONNECT's receipt, filled in and kept by finish; sni is the hello's
	// server name, set by run before any pump starts.
	rc  receipt.Tunnel
	sni string
}

func newTunnel(p *Proxy, host string, addrs []netip.Addr, client net.Conn, dialBudget time.Duration) *tunnel {
	ctx, cancel := context.WithCancel(context.Background())
	return &tunnel{p: p, host: host, addrs: addrs, budget: dialBudget, client: client, clientIO: dataConn(client), ctx: ctx, cancel: cancel}
}

func (t *tunnel) close() {
	t.closeOnce.Do(func() {
		t.cancel()
		t.client.Close()
		t.mu.Lock()
		t.closed = true
		if t.upstream != nil {
			t.upstream.Close()
		}
		t.mu.Unlock()
	})
}

func (t *tunnel) end(code reasons.Code, detail string) {
	t.endMu.Lock()
	if !t.ended {
		t.ended, t.endCode, t.endDetail = true, code, detail
	}
	t.endMu.Unlock()
	t.close()
}

// connectUpstream dials the checked addresses (happy eyeballs) and keeps the winner, unless
// the tunnel was closed meanwhile.
func (t *tunnel) connectUpstream() *refusal {
	ctx, cancel := context.WithTimeout(t.ctx, max(t.budget, 0))
	defer cancel()
	c, ap, err := dialHappy(ctx, t.addrs, tunnelPort, t.p.limits.dialer())
	if err != nil {
		return refuse(DialFailed, "%v", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return refuse(RunOver, "tunnel closed while connecting")
	}
	t.upstream, t.addr = c, ap
	return nil
}

// run checks the ClientHello (H6), then connects upstream, replays the hello and splices
// until both sides are done. A refused hello never opens an upstream connection.
func (t *tunnel) run(early []byte) {
	defer t.p.unregister(t)
	defer t.close()
	lim := t.p.limits
	t.clientIO.SetReadDeadline(time.Now().Add(lim.HelloTimeout))
	in := &prefixReader{prefix: early, r: t.clientIO}
	raw, sni, ref := readHello(in, t.host)
	t.sni = sni
	var first []byte
	if ref == nil {
		// The hello and anything the agent sent behind it go upstream unchanged.
		first = append(raw, in.prefix...)
		if t.p.sent.take(int64(len(first)), false) == 0 {
			ref = refuse(BytesLimit, "hello of %d bytes exceeds the sent budget", len(first))
		}
	}
	if ref == nil {
		if ref = t.connectUpstream(); ref != nil {
			t.p.sent.settle(int64(len(first)), 0)
		}
	}
	if ref == nil {
		n, err := t.upstream.Write(first)
		t.p.sent.settle(int64(len(first)), int64(n))
		t.moved[dirSent].Add(int64(n))
		if err != nil {
			t.finish("", err.Error())
			return
		}
	}
	if ref != nil {
		// The deferred close ends the tunnel; a code of "" is the agent hanging up, no refusal.
		if desc, ok := alertFor(ref); ok {
			t.clientIO.SetWriteDeadline(time.Now().Add(time.Second))
			t.clientIO.Write(alertRecord(desc))
		}
		if ref.code != "" {
			t.p.countRefusal(ref.code)
		}
		t.finish(ref.code, ref.detail)
		return
	}
	t.clientIO.SetReadDeadline(time.Time{})

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); t.pump(dirSent, t.upstream, t.clientIO, t.p.sent) }()
	go func() { defer wg.Done(); t.pump(dirReceived, t.clientIO, t.upstream, t.p.received) }()
	wg.Wait()
	t.endMu.Lock()
	code, detail := t.endCode, t.endDetail
	t.endMu.Unlock()
	if code == BytesLimit {
		t.p.countRefusal(code)
	}
	t.finish(code, detail)
}

// finish writes the tunnel's one log line and records its receipt.
func (t *tunnel) finish(code reasons.Code, detail string) {
	t.mu.Lock()
	addr := t.addr
	t.mu.Unlock()
	sent, received := t.moved[dirSent].Load(), t.moved[dirReceived].Load()
	t.p.log.Info("egress tunnel", "host", t.host, "addr", addr.String(),
		"sent", sent, "received", received, "reason", string(code), "detail", detail)
	rc := t.rc
	if addr.IsValid() {
		rc.Dialled = addr.String()
	}
	rc.SNI, rc.Sent, rc.Received = receipt.Clip(t.sni), sent, received
	t.p.record(rc, code)
}

// pump copies src to dst under the run's byte allowance b. Between two kernel sockets it
// splices through a pipe (splicePump). Otherwise it waits until src has bytes queued, reserves
// exactly those, and moves them with one ReadFrom over an io.LimitedReader. Either way the
// copy never waits for data while holding a reservation.
func (t *tunnel) pump(dir int, dst, src net.Conn, b *budget) {
	defer t.done[dir].Store(true)
	if s := newSplicer(dst, src); s != nil {
		t.splicePump(dir, dst, src, b, s)
		return
	}
	idle := t.p.limits.IdleTimeout
	var buf []byte // for copies that cannot splice
	for {
		src.SetReadDeadline(time.Now().Add(idle))
		queued, isSock, err := waitQueued(src)
		if !isSock {
			if buf == nil {
				buf = make([]byte, 32<<10)
			}
			queued, err = src.Read(buf)
			if queued == 0 && errors.Is(err, io.EOF) {
				t.halfClose(dir, dst)
				return
			}
		}
		if queued == 0 {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				if t.idleBoth(dir) {
					t.end("", "idle")
					return
				}
				continue
			case err != nil:
				t.end("", err.Error())
				return
			}
			t.halfClose(dir, dst)
			return
		}
		want := int64(min(queued, maxChunk))
		grant := b.take(want, true)
		if grant == 0 {
			// The run's allowance is spent and another byte is waiting (R1: the last
			// allowed byte passed, this one does not).
			t.end(BytesLimit, dirName(dir)+" bytes used up")
			return
		}
		dst.SetWriteDeadline(time.Now().Add(idle))
		var n int64
		if isSock {
			n, err = copyChunk(dst, src, grant, &buf)
		} else {
			var m int
			m, err = dst.Write(buf[:grant])
			n = int64(m)
		}
		b.settle(grant, n)
		t.moved[dir].Add(n)
		t.idle[dir].Store(false)
		switch {
		case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
			t.end("", "the other side stopped reading")
			return
		case err != nil:
			t.end("", err.Error())
			return
		case !isSock && int64(queued) > grant:
			t.end(BytesLimit, dirName(dir)+" bytes used up")
			return
		}
	}
}

func dirName(dir int) string {
	if dir == dirSent {
		return "sent"
	}
	return "received"
}

// idleBoth marks dir idle and reports whether the other direction is idle or done too.
func (t *tunnel) idleBoth(dir int) bool {
	t.idle[dir].Store(true)
	return t.idle[1-dir].Load() || t.done[1-dir].Load()
}

// halfClose passes an EOF on; when the other direction has ended too, the tunnel closes.
func (t *tunnel) halfClose(dir int, dst net.Conn) {
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		t.close()
	}
	t.done[dir].Store(true)
	if t.done[1-dir].Load() {
		t.close()
	}
}

// copyChunk moves at most n bytes. It returns a nil error with fewer than n bytes at EOF.
func copyChunk(dst, src net.Conn, n int64, buf *[]byte) (int64, error) {
	lr := &io.LimitedReader{R: src, N: n}
	if rf, ok := dst.(io.ReaderFrom); ok {
		// *net.TCPConn: splice(2) from a *TCPConn or *UnixConn source, no user-space copy.
		return rf.ReadFrom(lr)
	}
	if *buf == nil {
		*buf = make([]byte, 32<<10)
	}
	return io.CopyBuffer(dst, lr, *buf)
}

// dataConn returns the connection under a wrapper that exposes it with a NetConn method
// (as pkg/endpoint's connection-counting wrapper may), so the wrapper does not cost the
// splice path. A *tls.Conn is never unwrapped: its NetConn carries ciphertext.
func dataConn(c net.Conn) net.Conn {
	for range 4 {
		if _, isTLS := c.(*tls.Conn); isTLS {
			break
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok || u.NetConn() == nil {
			break
		}
		c = u.NetConn()
	}
	return c
}

// prefixReader reads prefix first, then r; what is left of prefix stays visible.
type prefixReader struct {
	prefix []byte
	r      io.Reader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.r.Read(b)
}
