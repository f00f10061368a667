package egress

import (
	"net/http"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// TestParseConnect checks the H4 parser on request-targets directly, including forms the
// net/http server happens to reject before a handler runs today (defence if that changes).
func TestParseConnect(t *testing.T) {
	cases := []struct {
		target   string
		want     string
		wantCode reasons.Code
	}{
		{"pypi.org:443", "pypi.org", ""},
		{"pypi.org.:443", "pypi.org", ""},
		{"pypi.org:+443", "", BadConnect},
		{"pypi.org:443 ", "", BadConnect},
		{"pypi%2eorg:443", "", BadConnect},
		{"::1:443", "", BadHost},
		{"[::1]:443", "", BadHost},
		{"pypi.org:443@evil.com:443", "", BadConnect},
		{"pypi.org\\@evil.com:443", "", BadConnect},
		{"pypi.org#@evil.com:443", "", BadConnect},
		{"PYPI.ORG:443", "", BadHost},
		{":443", "", BadHost},
		{"", "", BadConnect},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			r := &http.Request{Method: http.MethodConnect, RequestURI: c.target, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}}
			got, ref := parseConnect(r)
			code := reasons.Code("")
			if ref != nil {
				code = ref.code
			}
			if got != c.want || code != c.wantCode {
				t.Fatalf("parseConnect(%q) = %q, %q, want %q, %q", c.target, got, code, c.want, c.wantCode)
			}
		})
	}
}
