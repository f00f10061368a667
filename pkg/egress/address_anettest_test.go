//go:build anettest

package egress

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/reasons"
)

// TestTunnelAddressesH5: the proxy refuses a name if ANY of its addresses is special-purpose
// (mixed answers, AAAA-only, embedded IPv4 forms) and then connects nowhere; a name whose
// every address is public is dialled at a verified address.
func TestTunnelAddressesH5(t *testing.T) {
	up := startTLSUpstream(t)
	trap := startTrap(t, "127.0.0.1:443") // where a rebinding or unverified dial would land
	redirectTo(t, pypiIP+":443", up.addr)
	redirectTo(t, "["+pypiIPv6+"]:443", up.addr)
	cases := []struct {
		name  string
		addrs []netip.Addr
		err   error
		want  reasons.Code
	}{
		{"one public A", addrs(pypiIP), nil, ""},
		{"AAAA only, public", addrs(pypiIPv6), nil, ""},
		{"public A and AAAA", addrs(pypiIP, pypiIPv6), nil, ""},
		{"IPv4-mapped public", addrs("::ffff:" + pypiIP), nil, ""},
		{"public then loopback", addrs(pypiIP, "127.0.0.1"), nil, AddressRefused},
		{"loopback then public", addrs("127.0.0.1", pypiIP), nil, AddressRefused},
		{"public A, unique-local AAAA", addrs(pypiIP, "fd00::1"), nil, AddressRefused},
		{"AAAA only, loopback", addrs("::1"), nil, AddressRefused},
		{"AAAA only, link-local", addrs("fe80::1"), nil, AddressRefused},
		{"cloud metadata", addrs("169.254.169.254"), nil, AddressRefused},
		{"CGNAT", addrs("100.64.0.1"), nil, AddressRefused},
		{"this network 0.0.0.1", addrs("0.0.0.1"), nil, AddressRefused},
		{"IPv4-mapped loopback", addrs("::ffff:127.0.0.1"), nil, AddressRefused},
		{"IPv4-compatible loopback", addrs("::127.0.0.1"), nil, AddressRefused},
		{"6to4 of loopback", addrs("2002:7f00:1::1"), nil, AddressRefused},
		{"NAT64 of loopback", addrs("64:ff9b::7f00:1"), nil, AddressRefused},
		{"Teredo", addrs("2001:0:4136:e378:8000:63bf:80ff:fffe"), nil, AddressRefused},
		{"no address", nil, nil, ResolveFailed},
		{"lookup error", nil, errors.New("servfail"), ResolveFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &countingResolver{table: map[string][]netip.Addr{"pypi.org": c.addrs}, err: c.err}
			tp := startProxy(t, Policy{Allow: []string{"pypi.org"}}, res)
			conns := up.conns.Load()
			if c.want == "" {
				body, err := get(t, httpsVia(t, tp), "https://pypi.org/simple/")
				if err != nil || body != "upstream saw pypi.org /simple/" {
					t.Fatalf("GET through tunnel = %q, %v, want the upstream's answer", body, err)
				}
			} else {
				conn, resp, body := tp.connect(t, connectHead("pypi.org"))
				conn.Close()
				wantRefusal(t, c.name, resp, body, c.want)
				if up.conns.Load() != conns {
					t.Fatalf("refused name, but the upstream got a connection")
				}
			}
			if trap.conns.Load() != 0 {
				t.Fatalf("a connection reached 127.0.0.1:443")
			}
			if res.count() != 1 {
				t.Fatalf("resolver called %d times, want exactly 1", res.count())
			}
		})
	}
}

// TestTunnelRebindingH5: the name resolves to a public address at check time and to loopback
// afterwards; the proxy dials the address it checked and never looks the name up again.
func TestTunnelRebindingH5(t *testing.T) {
	up := startTLSUpstream(t)
	trap := startTrap(t, "127.0.0.1:443")
	redirectTo(t, pypiIP+":443", up.addr)
	res := &countingResolver{
		table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)},
		next:  map[string][]netip.Addr{"pypi.org": addrs("127.0.0.1")},
	}
	tp := startProxy(t, Policy{Allow: []string{"pypi.org"}}, res)
	client := httpsVia(t, tp)
	for i := range 3 {
		body, err := get(t, client, "https://pypi.org/")
		if i == 0 {
			if err != nil || body != "upstream saw pypi.org /" {
				t.Fatalf("first GET = %q, %v, want the upstream's answer", body, err)
			}
			continue
		}
		// Later tunnels resolve anew, now to loopback: refused, not dialled.
		if err == nil {
			t.Fatalf("GET %d after rebinding succeeded, want refusal", i)
		}
	}
	if trap.conns.Load() != 0 {
		t.Fatalf("the rebound address 127.0.0.1:443 got a connection")
	}
	if got := tp.refusals(AddressRefused); got != 2 {
		t.Fatalf("refusals[%s] = %d, want 2", AddressRefused, got)
	}
	if res.count() != 3 {
		t.Fatalf("resolver called %d times for 3 tunnels, want 3 (one per tunnel, none at dial)", res.count())
	}
}

// TestTunnelDNSResolverH5: with the proxy's own DNS resolver, the name is asked as an FQDN,
// the answer is checked, and a DNS answer pointing at loopback is refused.
func TestTunnelDNSResolverH5(t *testing.T) {
	up := startTLSUpstream(t)
	redirectTo(t, pypiIP+":443", up.addr)
	d := startFakeDNS(t)
	d.addIP("pypi.org.", pypiIP)
	d.addIP("files.pythonhosted.org.", "127.0.0.1")
	res := &dnsResolver{servers: []string{d.addr}, timeout: 10 * time.Second}
	tp := startProxy(t, Policy{Allow: []string{"pypi.org", "files.pythonhosted.org"}}, res)
	body, err := get(t, httpsVia(t, tp), "https://pypi.org/")
	if err != nil || body != "upstream saw pypi.org /" {
		t.Fatalf("GET https://pypi.org/ = %q, %v, want the upstream's answer", body, err)
	}
	_, resp, rbody := tp.connect(t, connectHead("files.pythonhosted.org"))
	wantRefusal(t, "CONNECT files.pythonhosted.org:443", resp, rbody, AddressRefused)
	// A and AAAA go out in parallel, so their order is the scheduler's.
	want := []string{"files.pythonhosted.org. A", "files.pythonhosted.org. AAAA", "pypi.org. A", "pypi.org. AAAA"}
	if got := slices.Sorted(slices.Values(d.questions())); !slices.Equal(got, want) {
		t.Fatalf("DNS questions = %v, want %v", got, want)
	}
}

// TestNoProxyFromEnvironmentH7: with every proxy variable pointing at a trap, tunnels and
// dialer.Dial still connect directly; the trap sees nothing.
func TestNoProxyFromEnvironmentH7(t *testing.T) {
	trap := startTrap(t, "127.0.0.1:0")
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(k, "http://"+trap.addr)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	up := startTLSUpstream(t)
	redirectTo(t, pypiIP+":443", up.addr)
	d := startFakeDNS(t)
	d.addIP("pypi.org.", pypiIP)
	tp := startProxy(t, Policy{Allow: []string{"pypi.org"}}, &dnsResolver{servers: []string{d.addr}, timeout: 10 * time.Second})
	body, err := get(t, httpsVia(t, tp), "https://pypi.org/")
	if err != nil || body != "upstream saw pypi.org /" {
		t.Fatalf("GET through tunnel = %q, %v, want the upstream's answer", body, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialer.Dial(ctx, "tcp", up.addr)
	if err != nil {
		t.Fatalf("dialer.Dial(%s) = %v", up.addr, err)
	}
	if c.RemoteAddr().String() != up.addr {
		t.Errorf("dialer.Dial connected to %s, want %s", c.RemoteAddr(), up.addr)
	}
	c.Close()
	if n := trap.conns.Load(); n != 0 {
		t.Fatalf("the proxy from the environment got %d connections, want 0", n)
	}
}

// TestTunnelOverUnixSocket: the endpoint serves a unix socket; a real TLS client completes a
// request through a tunnel on it.
func TestTunnelOverUnixSocket(t *testing.T) {
	up := startTLSUpstream(t)
	redirectTo(t, pypiIP+":443", up.addr)
	tp := startProxyOn(t, Policy{Allow: []string{"pypi.org"}},
		&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}}, true)
	body, err := get(t, httpsVia(t, tp), "https://pypi.org/x")
	if err != nil || body != "upstream saw pypi.org /x" {
		t.Fatalf("GET over the unix endpoint = %q, %v, want the upstream's answer", body, err)
	}
	testkit.WaitFor(t, "the tunnel to end", func() bool { return tp.p.Usage().TunnelsOpen == 0 })
	u := tp.p.Usage()
	if u.TunnelsOpened != 1 || u.BytesSent == 0 || u.BytesReceived == 0 || len(u.Refusals) != 0 {
		t.Fatalf("usage = %+v, want 1 tunnel with bytes both ways and no refusal", u)
	}
}

// TestCloseEndsTunnels: Close (the run is over) ends open tunnels and refuses new ones.
func TestCloseEndsTunnels(t *testing.T) {
	tp, up := pypiProxy(t, Limits{})
	conn := tp.open(t, "pypi.org")
	conn.Write(goHello(t, tlsConfig("pypi.org")))
	sc := up.conn(t, 0)
	testkit.WaitFor(t, "the hello upstream", func() bool { return sc.n() > 0 })
	tp.p.Close()
	waitClosed(t, conn)
	select {
	case <-sc.done:
	case <-time.After(30 * time.Second):
		t.Fatal("upstream side not closed after Close")
	}
	_, resp, body := tp.connect(t, connectHead("pypi.org"))
	wantRefusal(t, "CONNECT after Close", resp, body, RunOver)
	testkit.WaitFor(t, "no open tunnel", func() bool { return tp.p.Usage().TunnelsOpen == 0 })
}

// TestNoNameserverRefusesOnlyTheTunnel: a resolv.conf with no nameserver line (an offline host)
// does not stop the proxy from being built (which would close every sandboxed run and the
// endpoint's loopback-only self-test); a CONNECT is refused with egress_resolve_failed and
// connects nowhere, and a nameserver written later applies to the next lookup (H5).
func TestNoNameserverRefusesOnlyTheTunnel(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("# written by an offline installer\nsearch example.internal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trap := startTrap(t, "127.0.0.1:443")
	res := &fileResolver{path: conf, timeout: time.Second}
	tp := startProxy(t, Policy{Allow: []string{"pypi.org"}}, res)
	conn, resp, body := tp.connect(t, connectHead("pypi.org"))
	conn.Close()
	wantRefusal(t, "no nameserver line", resp, body, ResolveFailed)
	if trap.conns.Load() != 0 {
		t.Fatal("a connection reached 127.0.0.1:443")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := res.LookupNetIP(ctx, "ip", "pypi.org")
	if err == nil || !strings.Contains(err.Error(), conf) || !strings.Contains(err.Error(), "no nameserver line") {
		t.Fatalf("lookup with no nameserver line: %v, want an error naming %s and the missing line", err, conf)
	}
	// A nameserver the operator adds is read at the next lookup (nothing answers on
	// 127.0.0.1:53 here, so the lookup fails, but for another reason).
	if err := os.WriteFile(conf, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = res.LookupNetIP(ctx, "ip", "pypi.org")
	if err == nil || strings.Contains(err.Error(), "no nameserver line") {
		t.Fatalf("lookup after a nameserver was written: %v, want the name server asked", err)
	}
}
