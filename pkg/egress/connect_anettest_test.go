//go:build anettest

package egress

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/reasons"
)

// TestConnectSpellingsH4 sends CONNECT heads byte for byte to a real HTTP/1.1 server in front
// of the proxy. Only the exact authority form `name:443` of a listed name opens a tunnel;
// every other spelling is refused with its reason, before any lookup or connection.
func TestConnectSpellingsH4(t *testing.T) {
	up := startTLSUpstream(t)
	redirectTo(t, pypiIP+":443", up.addr)
	redirectTo(t, filesIP+":443", up.addr)
	res := &countingResolver{table: map[string][]netip.Addr{
		"pypi.org":          addrs(pypiIP),
		"xn--mnchen-3ya.de": addrs(filesIP),
	}}
	tp := startProxy(t, Policy{Allow: []string{"pypi.org", "xn--mnchen-3ya.de"}}, res)
	head := func(target string, extra ...string) string {
		// A benign Host header: the attack is in the request-target, which net/http
		// parses loosely.
		return "CONNECT " + target + " HTTP/1.1\r\nHost: pypi.org:443\r\n" + strings.Join(extra, "") + "\r\n"
	}
	cases := []struct {
		name string
		raw  string
		want reasons.Code // "" = 200
	}{
		{"exact name", head("pypi.org:443"), ""},
		{"trailing dot folded", head("pypi.org.:443"), ""},
		{"punycode name", head("xn--mnchen-3ya.de:443"), ""},
		{"no Host header", "CONNECT pypi.org:443 HTTP/1.1\r\n\r\n", ""},
		{"upper case", head("PyPI.org:443"), BadHost},
		{"IDN U-label", head("münchen.de:443"), BadHost},
		{"two trailing dots", head("pypi.org..:443"), BadHost},
		{"not listed", head("files.pythonhosted.org:443"), HostNotAllowed},
		{"subdomain of a listed name", head("evil.pypi.org:443"), HostNotAllowed},
		{"listed name as prefix", head("pypi.org.evil.com:443"), HostNotAllowed},
		{"listed name without its first label", head("org:443"), BadHost},
		{"port 80", head("pypi.org:80"), BadConnect},
		{"port 8443", head("pypi.org:8443"), BadConnect},
		{"port 0443", head("pypi.org:0443"), BadConnect},
		{"no port", head("pypi.org"), BadConnect},
		{"empty port", head("pypi.org:"), BadConnect},
		{"userinfo smuggling", head("pypi.org:443@evil.com:443"), BadConnect},
		{"userinfo", head("user:pass@pypi.org:443"), BadConnect},
		{"scheme http", head("http://pypi.org:443"), BadConnect},
		{"scheme https with path", head("https://pypi.org:443/"), BadConnect},
		{"path", head("pypi.org:443/simple"), BadConnect},
		{"origin form", head("/pypi.org:443"), BadConnect},
		{"query", head("pypi.org:443?x=1"), BadConnect},
		{"IPv4 literal", head("151.101.0.223:443"), BadHost},
		{"loopback literal", head("127.0.0.1:443"), BadHost},
		{"short IPv4 127.1", head("127.1:443"), BadHost},
		{"decimal IPv4", head("2130706433:443"), BadHost},
		{"hex IPv4", head("0x7f000001:443"), BadHost},
		{"dotted hex IPv4", head("0x7f.0.0.1:443"), BadHost},
		{"octal IPv4", head("0177.0.0.1:443"), BadHost},
		{"IPv4 with trailing dot", head("127.0.0.1.:443"), BadHost},
		{"IPv6 literal", head("[::1]:443"), BadHost},
		{"IPv4-mapped IPv6 literal", head("[::ffff:127.0.0.1]:443"), BadHost},
		{"localhost", head("localhost:443"), BadHost},
		{"under localhost", head("pypi.org.localhost:443"), BadHost},
		{".local", head("printer.local:443"), BadHost},
		{".internal", head("metadata.google.internal:443"), BadHost},
		{".lan", head("nas.lan:443"), BadHost},
		{".home.arpa", head("router.home.arpa:443"), BadHost},
		{"wildcard", head("*.pypi.org:443"), BadHost},
		{"underscore", head("_srv.pypi.org:443"), BadHost},
		{"Content-Length", head("pypi.org:443", "Content-Length: 5\r\n") + "hello", BadConnect},
		{"Content-Length zero", head("pypi.org:443", "Content-Length: 0\r\n"), BadConnect},
		{"Transfer-Encoding", head("pypi.org:443", "Transfer-Encoding: chunked\r\n") + "0\r\n\r\n", BadConnect},
		{"HTTP/1.0 (Python's http.client)", "CONNECT pypi.org:443 HTTP/1.0\r\n\r\n", ""},
		{"HTTP/1.2", "CONNECT pypi.org:443 HTTP/1.2\r\n\r\n", BadConnect},
		{"oversized headers", head("pypi.org:443", "X-Pad: "+strings.Repeat("a", maxConnectHeaderBytes)+"\r\n"), BadConnect},
		{"many headers", head("pypi.org:443", strings.Repeat("X-A: b\r\n", 1200)), BadConnect},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lookups, conns := res.count(), up.conns.Load()
			conn, resp, body := tp.connect(t, c.raw)
			defer conn.Close()
			if c.want == "" {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%q = %d %q, want 200", firstLine(c.raw), resp.StatusCode, body)
				}
				// The upstream is dialled once the hello has passed (H6).
				target := strings.Fields(firstLine(c.raw))[1]
				conn.Write(goHello(t, tlsConfig(strings.TrimSuffix(target[:strings.LastIndexByte(target, ':')], "."))))
				testkit.WaitFor(t, "the upstream connection", func() bool { return up.conns.Load() == conns+1 })
				return
			}
			wantRefusal(t, firstLine(c.raw), resp, body, c.want)
			if resp.Close != true {
				t.Errorf("%q: refusal keeps the connection open; bytes behind it would be read as a request", firstLine(c.raw))
			}
			if res.count() != lookups || up.conns.Load() != conns {
				t.Fatalf("%q: refused, but the proxy looked up or connected (lookups %d→%d, conns %d→%d)",
					firstLine(c.raw), lookups, res.count(), conns, up.conns.Load())
			}
		})
	}
}

// TestConnectRefusedByServerH4: spellings net/http itself rejects never reach the proxy;
// the test pins that they are refused, not tunnelled.
func TestConnectRefusedByServerH4(t *testing.T) {
	res := &countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}}
	tp := startProxy(t, Policy{Allow: []string{"pypi.org"}}, res)
	cases := []struct {
		name, raw string
		status    int
	}{
		{"HTTP/2.0 on an HTTP/1 server", "CONNECT pypi.org:443 HTTP/2.0\r\n\r\n", http.StatusHTTPVersionNotSupported},
		{"two Host headers", "CONNECT pypi.org:443 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", http.StatusBadRequest},
		{"port +443", "CONNECT pypi.org:+443 HTTP/1.1\r\n\r\n", http.StatusBadRequest},
		{"percent-encoded name", "CONNECT pypi%2eorg:443 HTTP/1.1\r\n\r\n", http.StatusBadRequest},
		{"bare IPv6", "CONNECT ::1:443 HTTP/1.1\r\n\r\n", http.StatusBadRequest},
		{"space in target", "CONNECT pypi.org :443 HTTP/1.1\r\n\r\n", http.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, resp, body := tp.connect(t, c.raw)
			if resp.StatusCode != c.status {
				t.Fatalf("%q = %d %q, want %d", firstLine(c.raw), resp.StatusCode, body, c.status)
			}
			if res.count() != 0 {
				t.Fatalf("%q: resolver called %d times, want 0", firstLine(c.raw), res.count())
			}
		})
	}
}

// TestConnectLogsNoCredentials: whatever the agent puts in a CONNECT's headers (its
// placeholder key, say) is never written to the log, whether the tunnel opens or not (F3).
func TestConnectLogsNoCredentials(t *testing.T) {
	tp, _ := pypiProxy(t, Limits{})
	const secret = "sk-ant-placeholder-0123456789"
	for _, target := range []string{"pypi.org:443", "evil.example.com:443", "pypi.org:80"} {
		c, _, _ := tp.connect(t, "CONNECT "+target+" HTTP/1.1\r\nProxy-Authorization: Bearer "+secret+"\r\nX-Api-Key: "+secret+"\r\n\r\n")
		c.Close()
	}
	testkit.WaitFor(t, "the tunnel to end", func() bool { return tp.p.Usage().TunnelsOpen == 0 })
	if strings.Contains(tp.logText(), secret) || strings.Contains(tp.logText(), "Bearer") {
		t.Fatalf("log contains the agent's credential:\n%s", tp.logText())
	}
	if !strings.Contains(tp.logText(), "egress_host_not_allowed") {
		t.Fatalf("log has no refusal line at all; the check proves nothing:\n%s", tp.logText())
	}
}
