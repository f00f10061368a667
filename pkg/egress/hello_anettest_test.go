//go:build anettest

package egress

import (
	"bytes"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// TestTunnelClientHelloH6 sends every hello case through a real tunnel: a passing hello
// reaches the upstream byte for byte; a refused one closes the tunnel (with a TLS alert for
// SNI/ECH/malformed), is counted under its reason, and the upstream, a listener that counts
// its connections, is never even connected to (the hello is checked before the dial).
func TestTunnelClientHelloH6(t *testing.T) {
	for _, c := range helloCases(t) {
		t.Run(c.name, func(t *testing.T) {
			tp, up := pypiProxy(t, Limits{})
			conn := tp.open(t, "pypi.org")
			writeHello(t, conn, c.raw, c.byteWrite)
			if c.closeMid {
				conn.(interface{ CloseWrite() error }).CloseWrite()
			}
			if c.want == "" {
				sc := up.conn(t, 0)
				testkit.WaitFor(t, "the hello upstream", func() bool { return sc.n() >= len(c.raw) })
				if got := sc.bytes(); !bytes.Equal(got, c.raw) {
					t.Fatalf("upstream got %d bytes, want the %d-byte hello unchanged", len(got), len(c.raw))
				}
				if u := tp.p.Usage(); len(u.Refusals) != 0 || u.TunnelsOpen != 1 {
					t.Fatalf("usage = %+v, want one open tunnel and no refusal", u)
				}
				return
			}
			got := waitClosed(t, conn)
			tp.waitRefusal(t, c.want, 1)
			if desc, ok := alertFor(&refusal{code: c.want}); ok {
				if !bytes.Equal(got, alertRecord(desc)) {
					t.Errorf("agent got %x before the close, want the alert %x", got, alertRecord(desc))
				}
			} else if len(got) != 0 {
				t.Errorf("agent got %x before the close, want nothing", got)
			}
			if n := up.count(); n != 0 {
				t.Fatalf("a refused tunnel opened %d upstream connections, want 0", n)
			}
		})
	}
}

func writeHello(t *testing.T, c net.Conn, raw []byte, byteWise bool) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	defer c.SetWriteDeadline(time.Time{})
	if !byteWise {
		c.Write(raw) // the proxy may close early on a refused hello; the reads tell
		return
	}
	for i := range raw {
		if _, err := c.Write(raw[i : i+1]); err != nil {
			return
		}
	}
}

// TestTunnelSlowHelloH6: a hello that does not complete before the deadline closes the
// tunnel with egress_hello_timeout, and nothing reaches the upstream.
func TestTunnelSlowHelloH6(t *testing.T) {
	tp, up := pypiProxy(t, Limits{HelloTimeout: 300 * time.Millisecond})
	conn := tp.open(t, "pypi.org")
	hello := goHello(t, tlsConfig("pypi.org"))
	conn.Write(hello[:len(hello)/2])
	got := waitClosed(t, conn)
	if len(got) != 0 {
		t.Errorf("agent got %x, want a bare close", got)
	}
	tp.waitRefusal(t, HelloTimeout, 1)
	if n := up.count(); n != 0 {
		t.Fatalf("a tunnel whose hello timed out opened %d upstream connections, want 0", n)
	}
}

// TestTunnelEarlyBytesH6: a client that sends its ClientHello (and more) in the same write as
// the CONNECT loses nothing: the bytes sit in the HTTP server's reader and are replayed.
func TestTunnelEarlyBytesH6(t *testing.T) {
	for _, unix := range []bool{false, true} {
		name := "tcp"
		if unix {
			name = "unix socket"
		}
		t.Run(name, func(t *testing.T) {
			up := startSink(t)
			redirectTo(t, pypiIP+":443", up.addr)
			tp := startProxyOn(t, Policy{Allow: []string{"pypi.org"}},
				&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}}, unix)
			hello := goHello(t, tlsConfig("pypi.org"))
			extra := []byte("application bytes right behind the hello")
			conn, resp, body := tp.connect(t, connectHead("pypi.org")+string(hello)+string(extra))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("CONNECT with early bytes = %d %q, want 200", resp.StatusCode, body)
			}
			want := append(append([]byte(nil), hello...), extra...)
			sc := up.conn(t, 0)
			testkit.WaitFor(t, "early bytes upstream", func() bool { return sc.n() >= len(want) })
			if got := sc.bytes(); !bytes.Equal(got, want) {
				t.Fatalf("upstream got %q..., want the hello and %q", got[len(got)-len(extra):], extra)
			}
			conn.Write([]byte("later"))
			testkit.WaitFor(t, "later bytes upstream", func() bool { return sc.n() == len(want)+5 })
		})
	}
}
