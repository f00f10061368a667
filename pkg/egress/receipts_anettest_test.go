//go:build anettest

package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
)

// countConn counts the bytes the agent's side of a tunnel wrote and read.
type countConn struct {
	net.Conn
	wrote, read atomic.Int64
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.wrote.Add(int64(n))
	return n, err
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

// waitReceipts waits until the proxy has kept n receipts and returns them; more is a failure
// (each CONNECT is recorded exactly once).
func (tp *testProxy) waitReceipts(t *testing.T, n int) []receipt.Tunnel {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("%d tunnel receipts", n), func() bool { rs, _ := tp.p.Receipts(); return len(rs) >= n })
	// A second recording of the same CONNECT would come right behind the first.
	time.Sleep(20 * time.Millisecond)
	rs, dropped := tp.p.Receipts()
	if len(rs) != n || dropped != 0 {
		t.Fatalf("receipts = %d (%d dropped), want %d: %+v", len(rs), dropped, n, rs)
	}
	if err := (receipt.Set{Tunnels: rs}).Validate(); err != nil {
		t.Fatalf("receipts do not validate: %v\n%+v", err, rs)
	}
	return rs
}

// wantEnd checks a receipt's end, code and rule (the rule from the catalog, as anetd shows it).
func wantEnd(t *testing.T, r receipt.Tunnel, end receipt.End, code reasons.Code, rule string) {
	t.Helper()
	if r.End != end || r.Code != code || r.Rule != rule {
		t.Fatalf("receipt ended %s/%s/%s, want %s/%s/%s: %+v", r.End, r.Code, r.Rule, end, code, rule, r)
	}
	if r.Opened.IsZero() || r.Ended.Before(r.Opened) || r.Opened.Location() != time.UTC || r.Ended.Location() != time.UTC {
		t.Fatalf("receipt times opened %v ended %v, want UTC and in order", r.Opened, r.Ended)
	}
}

// TestReceiptOfTunnelH4H6: a tunnel that carried a real TLS exchange to an allowed host is
// recorded with the host and port asked, the address dialled, the hello's server name and
// exactly the bytes the agent wrote and read; it closed normally.
func TestReceiptOfTunnelH4H6(t *testing.T) {
	up := startTLSUpstream(t)
	redirectTo(t, pypiIP+":443", up.addr)
	tp := startProxy(t, Policy{Allow: []string{"pypi.org"}},
		&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}})
	before := time.Now()
	cc := &countConn{Conn: tp.open(t, "pypi.org")}
	cc.SetDeadline(time.Now().Add(30 * time.Second))
	tc := tls.Client(cc, tlsConfig("pypi.org"))
	if _, err := io.WriteString(tc, "GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatalf("request through the tunnel: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatalf("answer through the tunnel: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "upstream saw pypi.org /simple/" {
		t.Fatalf("answer = %q", body)
	}
	// The upstream closes (Connection: close); read the tunnel to its end, so every byte the
	// proxy passed is counted here too.
	io.Copy(io.Discard, cc)
	cc.Close()
	r := tp.waitReceipts(t, 1)[0]
	wantEnd(t, r, receipt.Closed, "", "")
	if r.Host != "pypi.org" || r.Port != 443 || r.Dialled != pypiIP+":443" || r.SNI != "pypi.org" {
		t.Fatalf("receipt = %+v, want pypi.org:443 dialled at %s:443 with SNI pypi.org", r, pypiIP)
	}
	if r.Sent != cc.wrote.Load() || r.Received != cc.read.Load() || r.Sent == 0 || r.Received == 0 {
		t.Fatalf("receipt bytes sent %d received %d, want what the agent wrote (%d) and read (%d)", r.Sent, r.Received, cc.wrote.Load(), cc.read.Load())
	}
	if r.Opened.Before(before.Add(-time.Second)) || r.Ended.After(time.Now()) {
		t.Fatalf("receipt times %v–%v outside the test's", r.Opened, r.Ended)
	}
}

// TestReceiptsOfRefusalsH4H5H6: each refused CONNECT is recorded as refused, with the code the
// agent's answer carried in X-Anet-Refusal and the rule it enforces, and nothing dialled.
func TestReceiptsOfRefusalsH4H5H6(t *testing.T) {
	up := startSink(t)
	redirectTo(t, pypiIP+":443", up.addr)
	tp := startProxy(t, Policy{Allow: []string{"pypi.org", "files.pythonhosted.org"}},
		&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP), "files.pythonhosted.org": addrs("10.0.0.7")}})
	cases := []struct {
		target string
		host   string
		port   int
		code   reasons.Code
		rule   string
	}{
		{"evil.example.com:443", "evil.example.com", 443, HostNotAllowed, "H4"},
		{"pypi.org:80", "pypi.org", 80, BadConnect, "H4"},
		{"127.0.0.1:443", "127.0.0.1", 443, BadHost, "H4"},
		{"files.pythonhosted.org:443", "files.pythonhosted.org", 443, AddressRefused, "H5"},
	}
	for i, c := range cases {
		_, resp, body := tp.connect(t, "CONNECT "+c.target+" HTTP/1.1\r\n\r\n")
		wantRefusal(t, c.target, resp, body, c.code)
		r := tp.waitReceipts(t, i+1)[i]
		wantEnd(t, r, receipt.Refused, c.code, c.rule)
		if r.Host != c.host || r.Port != c.port || r.Dialled != "" || r.SNI != "" || r.Sent != 0 || r.Received != 0 {
			t.Fatalf("receipt of %s = %+v, want host %s port %d and nothing dialled or moved", c.target, r, c.host, c.port)
		}
	}
	// H6: the tunnel opened, but the hello names another server; it is refused before any
	// dial, and the receipt keeps the name the agent sent.
	conn := tp.open(t, "pypi.org")
	conn.Write(goHello(t, tlsConfig("files.pythonhosted.org")))
	waitClosed(t, conn)
	r := tp.waitReceipts(t, len(cases)+1)[len(cases)]
	wantEnd(t, r, receipt.Refused, SNIMismatch, "H6")
	if r.Host != "pypi.org" || r.SNI != "files.pythonhosted.org" || r.Dialled != "" || up.count() != 0 {
		t.Fatalf("receipt = %+v (%d upstream connections), want pypi.org with SNI files.pythonhosted.org, nothing dialled", r, up.count())
	}
}

// TestReceiptOfByteCapR1: the tunnel the sent limit ends is recorded as capped with the limit's
// code and exactly the bytes that passed; a CONNECT after it is capped too, before it opens.
func TestReceiptOfByteCapR1(t *testing.T) {
	hello := goHello(t, tlsConfig("pypi.org"))
	lim := int64(len(hello)) + 1000
	tp, up := pypiProxy(t, Limits{SentBytes: lim})
	conn := tp.open(t, "pypi.org")
	conn.Write(hello)
	conn.Write(bytes.Repeat([]byte("s"), int(lim)-len(hello)))
	sc := up.conn(t, 0)
	testkit.WaitFor(t, "the last allowed byte upstream", func() bool { return int64(sc.n()) == lim })
	conn.Write([]byte("x"))
	waitClosed(t, conn)
	r := tp.waitReceipts(t, 1)[0]
	wantEnd(t, r, receipt.Capped, BytesLimit, "R1")
	if r.Sent != lim || r.Received != 0 || r.Dialled != pypiIP+":443" || r.SNI != "pypi.org" {
		t.Fatalf("receipt = %+v, want %d sent to %s:443", r, lim, pypiIP)
	}
	_, resp, body := tp.connect(t, connectHead("pypi.org"))
	wantRefusal(t, "CONNECT after the sent limit", resp, body, BytesLimit)
	wantEnd(t, tp.waitReceipts(t, 2)[1], receipt.Capped, BytesLimit, "R1")
}

// TestReceiptOfDialFailureH5: an upstream that refuses the connection is recorded as failed,
// with the dial's code and no address dialled.
func TestReceiptOfDialFailureH5(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	ln.Close()
	redirectTo(t, pypiIP+":443", closedPort)
	tp := startProxy(t, Policy{Allow: []string{"pypi.org"}},
		&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}})
	conn := tp.open(t, "pypi.org")
	conn.Write(goHello(t, tlsConfig("pypi.org")))
	waitClosed(t, conn)
	r := tp.waitReceipts(t, 1)[0]
	wantEnd(t, r, receipt.Failed, DialFailed, "H5")
	if r.Dialled != "" || r.SNI != "pypi.org" {
		t.Fatalf("receipt = %+v, want the hello's name and nothing dialled", r)
	}
}

// slowResolver answers pypi.org after delay, and says when a lookup has begun.
type slowResolver struct {
	delay   atomic.Int64 // nanoseconds
	started chan struct{}
}

func (r *slowResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	d := time.Duration(r.delay.Load())
	r.started <- struct{}{}
	time.Sleep(d)
	return addrs(pypiIP), nil
}

// TestCloseWaitsForReceiptsR1: Close returns only once every CONNECT in flight has recorded
// its receipt, so the run's usage, read right after, holds them all: the open tunnels the
// run's end cut, and a CONNECT still resolving, are recorded as closed with the code saying
// why.
func TestCloseWaitsForReceiptsR1(t *testing.T) {
	up := startSink(t)
	redirectTo(t, pypiIP+":443", up.addr)
	res := &slowResolver{started: make(chan struct{}, 8)}
	tp := startProxy(t, Policy{Allow: []string{"pypi.org"}, Limits: Limits{HelloTimeout: 5 * time.Minute}}, res)
	const open = 2
	for range open {
		tp.open(t, "pypi.org")
		<-res.started
	}
	testkit.WaitFor(t, "two tunnels open", func() bool { return tp.p.Usage().TunnelsOpen == open })
	res.delay.Store(int64(300 * time.Millisecond))
	c := tp.dial(t)
	io.WriteString(c, connectHead("pypi.org"))
	<-res.started
	tp.p.Close()
	rs, _ := tp.p.Receipts()
	if len(rs) != open+1 {
		t.Fatalf("after Close: %d receipts, want %d: %+v", len(rs), open+1, rs)
	}
	for _, r := range rs {
		wantEnd(t, r, receipt.Closed, RunOver, "R1")
	}
	_, resp, body := tp.connect(t, connectHead("pypi.org"))
	wantRefusal(t, "CONNECT after Close", resp, body, RunOver)
	if rs := tp.waitReceipts(t, open+2); rs[open+1].End != receipt.Closed || rs[open+1].Code != RunOver {
		t.Fatalf("receipt of a CONNECT after Close = %+v", rs[open+1])
	}
}

// TestRefusalBodyNamesRuleE9: the answer to a refused CONNECT names the rule and the code.
func TestRefusalBodyNamesRuleE9(t *testing.T) {
	got := refusalBody(HostNotAllowed)
	if !strings.HasPrefix(got, "anet: "+reasons.Text(HostNotAllowed)) || !strings.HasSuffix(got, " (rule H4, code egress_host_not_allowed)\n") {
		t.Fatalf("refusalBody = %q", got)
	}
}
