package peeraddr

import (
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// TestCheckC4: `anet peer add` takes an IP literal or a well-formed host name (local names
// too), with a port; everything else ("my host", "bad_host!", "a..b", 300
// characters) is refused with bad_peer_addr naming the field, before the sender would retry
// it forever.
func TestCheckC4(t *testing.T) {
	good := []string{"127.0.0.1:7420", "[::1]:7420", "192.168.1.20:1", "[2001:db8::1]:65535",
		"node-b.example.com:7420", "xn--bcher-kva.example:7420",
		// A peer may be on the operator's own network: local and single-label names dial.
		"localhost:7420", "nodeb:7420", "box.local:7420", "nas.home.arpa:7420"}
	for _, a := range good {
		t.Run("accepts "+a, func(t *testing.T) {
			if err := Check("addr", a); err != nil {
				t.Fatalf("Check(%q) = %v, want nil", a, err)
			}
		})
	}
	bad := []struct{ name, addr, want string }{
		{"space", "my host:7420", "has the character ' '"},
		{"punctuation", "bad_host!:7420", "has the character '_'"},
		{"empty label", "a..b:7420", "has an empty label"},
		{"too long", strings.Repeat("a", 300) + ".com:7420", "longer than host:port can be"},
		{"long label", strings.Repeat("a", 64) + ".com:7420", "label longer than 63"},
		{"no port", "node.example.com", "is not HOST:PORT"},
		{"port zero", "node.example.com:0", "must be a number from 1 to 65535"},
		{"port too big", "node.example.com:65536", "must be a number from 1 to 65535"},
		{"port with sign", "node.example.com:+80", "must be a number from 1 to 65535"},
		{"port leading zero", "node.example.com:080", "must be a number from 1 to 65535"},
		{"named port", "node.example.com:http", "must be a number from 1 to 65535"},
		{"no host", ":7420", "has no host"},
		{"upper case", "Node.Example.com:7420", "upper-case"},
		{"numeric ip-like", "127.1:7420", "numeric label"},
		{"bracketed name", "[node.example.com]:7420", "only an IPv6 address goes in brackets"},
		{"zone", "[fe80::1%eth0]:7420", "zone"},
		{"unspecified", "0.0.0.0:7420", "no host to dial"},
		{"control character", "node\x1b.example.com:7420", "has the character"},
		{"unicode", "bücher.example:7420", "punycode"},
	}
	for _, c := range bad {
		t.Run("refuses "+c.name, func(t *testing.T) {
			err := Check("addr", c.addr)
			if reasons.CodeOf(err) != reasons.BadPeerAddr || !strings.Contains(err.Error(), "addr: ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check(%q) = %v, want %s naming addr and %q", c.addr, err, reasons.BadPeerAddr, c.want)
			}
		})
	}
}
