//go:build anettest

package egress

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// TestOpenTunnelLimitR1: with R1's defaults the 16th open tunnel passes, the 17th is refused,
// and once one closes a new one opens.
func TestOpenTunnelLimitR1(t *testing.T) {
	tp, _ := pypiProxy(t, Limits{HelloTimeout: 5 * time.Minute})
	var conns []net.Conn
	for range DefaultLimits().OpenTunnels {
		conns = append(conns, tp.open(t, "pypi.org"))
	}
	_, resp, body := tp.connect(t, connectHead("pypi.org"))
	wantRefusal(t, "17th open tunnel", resp, body, TunnelLimit)
	conns[0].Close()
	testkit.WaitFor(t, "15 open tunnels", func() bool { return tp.p.Usage().TunnelsOpen == 15 })
	if u := tp.p.Usage(); len(u.Refusals) != 1 || u.Refusals[TunnelLimit] != 1 {
		t.Fatalf("refusals = %v, want only the one %s (hanging up before the hello is no refusal)", u.Refusals, TunnelLimit)
	}
	tp.open(t, "pypi.org")
	if u := tp.p.Usage(); u.TunnelsOpen != 16 || u.TunnelsOpened != 17 {
		t.Fatalf("usage = %+v, want 16 open, 17 opened", u)
	}
}

// TestTotalTunnelLimitR1: with R1's defaults the 256th tunnel of a run passes, the 257th is
// refused even though none is open.
func TestTotalTunnelLimitR1(t *testing.T) {
	tp, _ := pypiProxy(t, Limits{})
	for i := range DefaultLimits().TotalTunnels {
		c := tp.open(t, "pypi.org")
		c.Close()
		testkit.WaitFor(t, fmt.Sprintf("tunnel %d to end", i+1), func() bool { return tp.p.Usage().TunnelsOpen == 0 })
	}
	_, resp, body := tp.connect(t, connectHead("pypi.org"))
	wantRefusal(t, "257th tunnel", resp, body, TunnelLimit)
	if u := tp.p.Usage(); u.TunnelsOpened != 256 {
		t.Fatalf("TunnelsOpened = %d, want 256", u.TunnelsOpened)
	}
}

// TestSentBytesLimitR1: the hello plus payload up to the limit reaches the upstream; the next
// byte ends the tunnel without reaching it, and new tunnels are refused with the reason.
func TestSentBytesLimitR1(t *testing.T) {
	hello := goHello(t, tlsConfig("pypi.org"))
	for _, lim := range []int64{int64(len(hello)) + 1000, DefaultLimits().SentBytes} {
		t.Run(fmt.Sprintf("limit %d", lim), func(t *testing.T) {
			tp, up := pypiProxy(t, Limits{SentBytes: lim})
			conn := tp.open(t, "pypi.org")
			conn.Write(hello)
			payload := bytes.Repeat([]byte("s"), int(lim)-len(hello))
			if _, err := conn.Write(payload); err != nil {
				t.Fatalf("write %d bytes: %v", len(payload), err)
			}
			sc := up.conn(t, 0)
			testkit.WaitFor(t, "the last allowed byte upstream", func() bool { return int64(sc.n()) == lim })
			if u := tp.p.Usage(); u.TunnelsOpen != 1 || len(u.Refusals) != 0 || u.BytesSent != lim {
				t.Fatalf("at the limit: usage = %+v, want the tunnel open, no refusal, %d sent", u, lim)
			}
			conn.Write([]byte("x"))
			waitClosed(t, conn)
			tp.waitRefusal(t, BytesLimit, 1)
			<-sc.done
			if int64(sc.n()) != lim {
				t.Fatalf("upstream got %d bytes, want exactly %d", sc.n(), lim)
			}
			_, resp, body := tp.connect(t, connectHead("pypi.org"))
			wantRefusal(t, "CONNECT after the sent limit", resp, body, BytesLimit)
		})
	}
}

// TestReceivedBytesLimitR1: the agent receives bytes up to the limit; the upstream's next byte
// ends the tunnel and is not delivered, and new tunnels are refused with the reason.
func TestReceivedBytesLimitR1(t *testing.T) {
	const lim = 5000
	tp, up := pypiProxy(t, Limits{ReceivedBytes: lim})
	conn := tp.open(t, "pypi.org")
	conn.Write(goHello(t, tlsConfig("pypi.org")))
	sc := up.conn(t, 0)
	if _, err := sc.c.Write(bytes.Repeat([]byte("r"), lim)); err != nil {
		t.Fatalf("upstream write: %v", err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, lim)
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("read the %d allowed bytes: %v", lim, err)
	}
	// The pump counts a chunk once it has been written to the agent, a moment after the agent
	// can read it.
	testkit.WaitFor(t, "the received bytes counted", func() bool { return tp.p.Usage().BytesReceived == lim })
	if u := tp.p.Usage(); u.TunnelsOpen != 1 || len(u.Refusals) != 0 || u.BytesReceived != lim {
		t.Fatalf("at the limit: usage = %+v, want the tunnel open, no refusal, %d received", u, lim)
	}
	sc.c.Write([]byte("y"))
	if rest := waitClosed(t, conn); len(rest) != 0 {
		t.Fatalf("agent got %q past the limit, want nothing", rest)
	}
	tp.waitRefusal(t, BytesLimit, 1)
	_, resp, body := tp.connect(t, connectHead("pypi.org"))
	wantRefusal(t, "CONNECT after the received limit", resp, body, BytesLimit)
}

// TestBytesLimitIsPerRunR1: the sent allowance is shared by every tunnel of the run.
func TestBytesLimitIsPerRunR1(t *testing.T) {
	hello := goHello(t, tlsConfig("pypi.org"))
	lim := int64(2*len(hello) + 100)
	tp, up := pypiProxy(t, Limits{SentBytes: lim})
	a := tp.open(t, "pypi.org")
	a.Write(append(append([]byte(nil), hello...), bytes.Repeat([]byte("a"), 60)...))
	testkit.WaitFor(t, "tunnel a's bytes", func() bool { return up.conn(t, 0).n() == len(hello)+60 })
	b := tp.open(t, "pypi.org")
	b.Write(append(append([]byte(nil), hello...), bytes.Repeat([]byte("b"), 40)...))
	testkit.WaitFor(t, "tunnel b's bytes", func() bool { return up.conn(t, 1).n() == len(hello)+40 })
	b.Write([]byte("!"))
	waitClosed(t, b)
	tp.waitRefusal(t, BytesLimit, 1)
	// Tunnel b is counted closed once its pumps have ended, a moment after the agent saw it.
	testkit.WaitFor(t, "tunnel b counted closed", func() bool { return tp.p.Usage().TunnelsOpen <= 1 })
	if u := tp.p.Usage(); u.BytesSent != lim || u.TunnelsOpen != 1 {
		t.Fatalf("usage = %+v, want %d sent and tunnel a still open", u, lim)
	}
}

// TestHelloOverSentBudgetR1: a hello that does not fit in what is left is not sent at all.
func TestHelloOverSentBudgetR1(t *testing.T) {
	hello := goHello(t, tlsConfig("pypi.org"))
	tp, up := pypiProxy(t, Limits{SentBytes: int64(len(hello) - 1)})
	conn := tp.open(t, "pypi.org")
	conn.Write(hello)
	waitClosed(t, conn)
	tp.waitRefusal(t, BytesLimit, 1)
	if n := up.count(); n != 0 {
		t.Fatalf("a hello over the budget opened %d upstream connections, want 0", n)
	}
}

// TestTunnelIdleTimeout: a tunnel with no byte either way for the idle period is closed (not
// a refusal).
func TestTunnelIdleTimeout(t *testing.T) {
	tp, up := pypiProxy(t, Limits{IdleTimeout: 300 * time.Millisecond})
	conn := tp.open(t, "pypi.org")
	conn.Write(goHello(t, tlsConfig("pypi.org")))
	sc := up.conn(t, 0)
	waitClosed(t, conn)
	<-sc.done
	testkit.WaitFor(t, "the tunnel to end", func() bool { return tp.p.Usage().TunnelsOpen == 0 })
	if u := tp.p.Usage(); len(u.Refusals) != 0 {
		t.Fatalf("usage = %+v, want no refusal for an idle close", u)
	}
	if !strings.Contains(tp.logText(), "detail=idle") {
		t.Fatalf("log %q does not say the tunnel ended idle", tp.logText())
	}
}

// TestTunnelHalfClose: the agent's EOF reaches the upstream while the other direction keeps
// flowing; the tunnel ends when both sides are done.
func TestTunnelHalfClose(t *testing.T) {
	tp, up := pypiProxy(t, Limits{})
	conn := tp.open(t, "pypi.org")
	conn.Write(goHello(t, tlsConfig("pypi.org")))
	conn.(*net.TCPConn).CloseWrite()
	sc := up.conn(t, 0)
	<-sc.done
	if !sc.eof.Load() {
		t.Fatal("upstream did not see the agent's EOF")
	}
	sc.c.Write([]byte("answer after the agent's EOF"))
	sc.c.(*net.TCPConn).CloseWrite()
	got := waitClosed(t, conn)
	if string(got) != "answer after the agent's EOF" {
		t.Fatalf("agent got %q after its half-close, want the answer", got)
	}
	testkit.WaitFor(t, "the tunnel to end", func() bool { return tp.p.Usage().TunnelsOpen == 0 })
}
