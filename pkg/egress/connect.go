package egress

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/hostname"
	"anet.dev/anet/pkg/reasons"
)

// maxConnectHeaderBytes caps the CONNECT head's header fields; a tunnel request needs none
// beyond a few short ones, and a large head is an attempt to smuggle or exhaust.
const maxConnectHeaderBytes = 8 << 10

// tunnelPort is the one port a tunnel may reach (H4).
const tunnelPort = 443

// refusal is a decision not to open (or to close) a tunnel.
type refusal struct {
	code   reasons.Code // "" only for a quiet end that is no refusal (the agent hung up)
	detail string       // for the log only; never sent to the agent, never a secret
}

func refuse(code reasons.Code, format string, args ...any) *refusal {
	return &refusal{code: code, detail: fmt.Sprintf(format, args...)}
}

// parseConnect applies H4 to a request the HTTP server has already parsed, re-reading the raw
// request-target, because net/http accepts forms a tunnel must not ("a.com:443@
// evil.com:443" becomes host evil.com; "http://x:443" parses; CONNECT may carry a body).
// It returns the normalised host name: one trailing dot removed, nothing else changed.
func parseConnect(r *http.Request) (string, *refusal) {
	if r.Method != http.MethodConnect {
		return "", refuse(BadConnect, "method %q", r.Method)
	}
	// HTTP/1.0 too: Python's http.client (so pip, urllib3 and requests) sends its CONNECT
	// as HTTP/1.0. Anything else cannot be hijacked into a byte stream the same way.
	if r.ProtoMajor != 1 || r.ProtoMinor > 1 {
		return "", refuse(BadConnect, "protocol %q", r.Proto)
	}
	if _, ok := r.Header["Content-Length"]; ok || r.ContentLength != 0 {
		return "", refuse(BadConnect, "content-length on connect")
	}
	if _, ok := r.Header["Transfer-Encoding"]; ok || len(r.TransferEncoding) != 0 {
		return "", refuse(BadConnect, "transfer-encoding on connect")
	}
	size := 0
	for k, vs := range r.Header {
		for _, v := range vs {
			size += len(k) + len(v) + 4
		}
	}
	if size > maxConnectHeaderBytes {
		return "", refuse(BadConnect, "headers of %d bytes", size)
	}
	target := r.RequestURI
	if strings.ContainsAny(target, "@/\\?#% \t") {
		return "", refuse(BadConnect, "request-target %q is not authority form", target)
	}
	if strings.HasPrefix(target, "[") {
		return "", refuse(BadHost, "request-target %q is an IPv6 literal", target)
	}
	i := strings.LastIndexByte(target, ':')
	if i < 0 {
		return "", refuse(BadConnect, "request-target %q has no port", target)
	}
	host, port := target[:i], target[i+1:]
	if port != strconv.Itoa(tunnelPort) {
		return "", refuse(BadConnect, "request-target %q: port %q is not %d", target, port, tunnelPort)
	}
	if strings.Contains(host, ":") {
		return "", refuse(BadHost, "request-target %q has more than one colon", target)
	}
	// The resolver always asks for the FQDN, so "pypi.org." and "pypi.org" name the same
	// host; fold that one dot and nothing else.
	host = strings.TrimSuffix(host, ".")
	if p := hostname.Problem(host); p != "" {
		return "", refuse(BadHost, "host %q %s", host, p)
	}
	return host, nil
}
