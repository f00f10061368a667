//go:build anettest

package egress

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// TestTunnelThroughWrappedConn: when the endpoint hands over a wrapped connection (it counts
// connections, R1), tunnels work either way: through the buffered copy when the wrapper hides
// the socket, through the socket when it offers NetConn. The byte limit holds on both paths.
func TestTunnelThroughWrappedConn(t *testing.T) {
	hello := goHello(t, tlsConfig("pypi.org"))
	cases := []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{
		{"opaque wrapper", func(c net.Conn) net.Conn { return opaqueConn{c} }},
		{"wrapper with NetConn", func(c net.Conn) net.Conn { return unwrappableConn{c} }},
	}
	for _, c := range cases {
		t.Run(c.name+": real TLS", func(t *testing.T) {
			up := startTLSUpstream(t)
			redirectTo(t, pypiIP+":443", up.addr)
			tp := startProxyWrapped(t, Policy{Allow: []string{"pypi.org"}},
				&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}}, false, c.wrap)
			body, err := get(t, httpsVia(t, tp), "https://pypi.org/w")
			if err != nil || body != "upstream saw pypi.org /w" {
				t.Fatalf("GET = %q, %v, want the upstream's answer", body, err)
			}
		})
		t.Run(c.name+": sent and received limits", func(t *testing.T) {
			lim := int64(len(hello) + 3000)
			up := startSink(t)
			redirectTo(t, pypiIP+":443", up.addr)
			tp := startProxyWrapped(t, Policy{Allow: []string{"pypi.org"}, Limits: Limits{SentBytes: lim, ReceivedBytes: 4000}},
				&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}}, false, c.wrap)
			conn := tp.open(t, "pypi.org")
			conn.Write(hello)
			sc := up.conn(t, 0)
			sc.c.Write(bytes.Repeat([]byte("r"), 4000))
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.ReadFull(conn, make([]byte, 4000)); err != nil {
				t.Fatalf("read the 4000 allowed bytes: %v", err)
			}
			conn.Write(bytes.Repeat([]byte("s"), 3000))
			testkit.WaitFor(t, "the last allowed byte upstream", func() bool { return int64(sc.n()) == lim })
			conn.Write([]byte("x"))
			waitClosed(t, conn)
			tp.waitRefusal(t, BytesLimit, 1)
			<-sc.done
			if int64(sc.n()) != lim {
				t.Fatalf("upstream got %d bytes, want exactly %d", sc.n(), lim)
			}
		})
	}
}
