//go:build anettest && linux

package egress

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// TestByteCapExactWithSpliceR1: through the zero-copy path, from a TCP or a unix agent socket
// (the endpoint's), each direction's cap holds to the byte even when the bytes past the cap
// arrive in the same write as the last allowed ones: exactly the cap is delivered, the tunnel
// ends with bytes_limit, and nothing past the cap reaches the other side. Exactly the cap, with
// nothing behind it, passes without a refusal. On the unix socket the bytes are spliced.
func TestByteCapExactWithSpliceR1(t *testing.T) {
	hello := goHello(t, tlsConfig("pypi.org"))
	const lim = 300_000 // several pipe loads at the smallest pipe size
	for _, front := range []string{"tcp", "unix"} {
		for _, over := range []int{0, 1, 70_000} {
			t.Run(fmt.Sprintf("%s received %d over", front, over), func(t *testing.T) {
				tp, up := spliceProxy(t, front == "unix", Limits{ReceivedBytes: lim})
				before := splicedBytes.Load()
				conn := tp.open(t, "pypi.org")
				conn.Write(hello)
				sc := up.conn(t, 0)
				if _, err := sc.c.Write(bytes.Repeat([]byte("r"), lim+over)); err != nil {
					t.Fatalf("upstream write: %v", err)
				}
				conn.SetReadDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.ReadFull(conn, make([]byte, lim)); err != nil {
					t.Fatalf("read the %d allowed bytes: %v", lim, err)
				}
				if over == 0 {
					if u := tp.p.Usage(); u.BytesReceived != lim || len(u.Refusals) != 0 || u.TunnelsOpen != 1 {
						t.Fatalf("at the cap: usage = %+v, want %d received, no refusal, the tunnel open", u, lim)
					}
				} else {
					if rest := waitClosed(t, conn); len(rest) != 0 {
						t.Fatalf("agent got %d bytes past the cap, want none", len(rest))
					}
					tp.waitRefusal(t, BytesLimit, 1)
					if u := tp.p.Usage(); u.BytesReceived != lim {
						t.Fatalf("BytesReceived = %d, want exactly %d", u.BytesReceived, lim)
					}
				}
				if front == "unix" {
					// Counted when the pipe closes, so end the tunnel first.
					conn.Close()
					sc.c.Close()
					testkit.WaitFor(t, "the received bytes counted as spliced (the zero-copy path)", func() bool { return splicedBytes.Load()-before >= lim })
				}
			})
			t.Run(fmt.Sprintf("%s sent %d over", front, over), func(t *testing.T) {
				sentLim := int64(len(hello) + lim)
				tp, up := spliceProxy(t, front == "unix", Limits{SentBytes: sentLim})
				before := splicedBytes.Load()
				conn := tp.open(t, "pypi.org")
				conn.Write(append(append([]byte(nil), hello...), bytes.Repeat([]byte("s"), lim+over)...))
				sc := up.conn(t, 0)
				testkit.WaitFor(t, "the last allowed byte upstream", func() bool { return int64(sc.n()) >= sentLim })
				if over == 0 {
					if u := tp.p.Usage(); u.BytesSent != sentLim || len(u.Refusals) != 0 || u.TunnelsOpen != 1 {
						t.Fatalf("at the cap: usage = %+v, want %d sent, no refusal, the tunnel open", u, sentLim)
					}
				} else {
					waitClosed(t, conn)
					tp.waitRefusal(t, BytesLimit, 1)
					<-sc.done
				}
				if int64(sc.n()) != sentLim {
					t.Fatalf("upstream got %d bytes, want exactly %d", sc.n(), sentLim)
				}
				if front == "unix" {
					conn.Close()
					sc.c.Close()
					testkit.WaitFor(t, "the sent bytes counted as spliced (the zero-copy path)", func() bool { return splicedBytes.Load()-before >= lim })
				}
			})
		}
	}
}

func spliceProxy(t *testing.T, unix bool, lim Limits) (*testProxy, *sink) {
	t.Helper()
	up := startSink(t)
	redirectTo(t, pypiIP+":443", up.addr)
	tp := startProxyOn(t, Policy{Allow: []string{"pypi.org"}, Limits: lim},
		&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}}, unix)
	return tp, up
}
