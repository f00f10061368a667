package peeraddr

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"anet.dev/anet/pkg/hostname"
	"anet.dev/anet/pkg/reasons"
)

// FuzzCheck: an address Check accepts is exactly host:port as the sender dials it (JoinHostPort
// gives it back byte for byte), its port a decimal from 1 to 65535, and its host an IP
// literal without a zone or a name pkg/hostname's syntax rule accepts; every refusal is bad_peer_addr
// naming the field, on one line (C4).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"127.0.0.1:7420", "[::1]:7420", "node-b.example.com:7420", "my host:7420",
		"bad_host!:7420", "a..b:7420", strings.Repeat("a", 300) + ":7420", "[fe80::1%eth0]:1", "0.0.0.0:1",
		"127.1:7420", "node.example.com:080", "[node.example.com]:1", "xn--bcher-kva.example:7420"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		err := Check("addr", addr)
		if err != nil {
			if reasons.CodeOf(err) != reasons.BadPeerAddr || !strings.Contains(err.Error(), "addr: ") || strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("Check(%q) = %q, want one line with %s naming addr", addr, err, reasons.BadPeerAddr)
			}
			return
		}
		host, port, serr := net.SplitHostPort(addr)
		if serr != nil || net.JoinHostPort(host, port) != addr {
			t.Fatalf("Check(%q) = nil, but it is not host:port as dialled (%v)", addr, serr)
		}
		if p, perr := strconv.Atoi(port); perr != nil || p < 1 || p > 65535 || strconv.Itoa(p) != port {
			t.Fatalf("Check(%q) = nil with port %q", addr, port)
		}
		if ip, ierr := netip.ParseAddr(host); ierr == nil {
			if ip.Zone() != "" || ip.IsUnspecified() {
				t.Fatalf("Check(%q) = nil with IP %s", addr, ip)
			}
		} else if why := hostname.SyntaxProblem(host); why != "" {
			t.Fatalf("Check(%q) = nil but hostname.SyntaxProblem(%q) = %q", addr, host, why)
		}
	})
}
