package egress

import (
	"bufio"
	"net/http"
	"slices"
	"strings"
	"testing"

	"anet.dev/anet/pkg/hostname"
)

// FuzzParseConnect (H4): a CONNECT request as net/http reads it off the wire is refused with
// H4's codes, or names a host that passes the host name rule, that the request-target spells
// exactly (with at most one trailing dot, port 443), and that normalises to itself: reading
// the CONNECT for the returned host gives the same host.
func FuzzParseConnect(f *testing.F) {
	for _, s := range []string{"pypi.org:443", "pypi.org.:443", "pypi.org:+443", "pypi%2eorg:443", "[::1]:443",
		"pypi.org:443@evil.com:443", "PYPI.ORG:443", ":443", "xn--mnchen-3ya.de:443", "xn---000a.a:443", "a..b:443"} {
		f.Add("CONNECT " + s + " HTTP/1.1\r\nHost: " + s + "\r\n\r\n")
	}
	f.Add("CONNECT pypi.org:443 HTTP/1.0\r\n\r\n")
	f.Add("CONNECT pypi.org:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
	f.Fuzz(func(t *testing.T, wire string) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(wire)))
		if err != nil {
			return
		}
		host, ref := parseConnect(r)
		if ref != nil {
			if !slices.Contains([]string{string(BadConnect), string(BadHost)}, string(ref.code)) || host != "" {
				t.Fatalf("parseConnect(%q) = %q, %v, want BadConnect or BadHost and no host", r.RequestURI, host, ref)
			}
			return
		}
		if p := hostname.Problem(host); p != "" {
			t.Fatalf("parseConnect(%q) = %q, which %s", r.RequestURI, host, p)
		}
		if r.RequestURI != host+":443" && r.RequestURI != host+".:443" {
			t.Fatalf("parseConnect(%q) = %q: not what the request-target spells", r.RequestURI, host)
		}
		again := &http.Request{Method: http.MethodConnect, RequestURI: host + ":443", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}}
		if h2, ref := parseConnect(again); ref != nil || h2 != host {
			t.Fatalf("parseConnect(%q:443) = %q, %v, want %q again", host, h2, ref, host)
		}
	})
}
