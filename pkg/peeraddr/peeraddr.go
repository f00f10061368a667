// Package peeraddr holds the one rule for a peer's dial address (`anet peer add AID
// HOST:PORT`): HOST is an IP literal or a well-formed host name (pkg/hostname's syntax rule;
// unlike an egress destination, a peer may be on the operator's own network, so "localhost"
// and "box.local" are names too), and PORT a number from 1 to 65535. The rule is checked where an address is
// read (the CLI, the control API) and again where it is applied (the store that records it,
// the sender that dials it), so an address the sender could only retry forever is never
// kept. It is a leaf package: the CLI links it without the store or the peer service.
package peeraddr

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/hostname"
	"anet.dev/anet/pkg/reasons"
)

// maxLen bounds the whole address: a 253-byte name, brackets, a colon and five digits.
const maxLen = 253 + 2 + 1 + 5

// Check returns nil for a valid peer address, or a *reasons.Error with code BadPeerAddr whose
// detail names the field and what is wrong. It never resolves a name.
func Check(field, addr string) error {
	if p := Problem(addr); p != "" {
		return reasons.New(reasons.BadPeerAddr, fmt.Sprintf("%s: %s", field, p))
	}
	return nil
}

// Problem returns why addr is not a valid peer address, or "" when it is. The text quotes
// addr only after it is known to be short, so a refusal stays one readable line.
func Problem(addr string) string {
	if len(addr) > maxLen {
		return fmt.Sprintf("is %d characters, longer than host:port can be (%d)", len(addr), maxLen)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q is not HOST:PORT (IPv6 in brackets: [::1]:7420)", addr)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != port {
		return fmt.Sprintf("%q: port %q must be a number from 1 to 65535", addr, port)
	}
	if host == "" {
		return fmt.Sprintf("%q has no host", addr)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return fmt.Sprintf("%q: an IPv6 zone (%q) is not allowed; give an address the peer can be reached at", addr, "%"+ip.Zone())
		}
		if ip.IsUnspecified() {
			return fmt.Sprintf("%q: %s is no host to dial", addr, host)
		}
		return ""
	}
	if strings.Contains(addr, "[") {
		return fmt.Sprintf("%q: only an IPv6 address goes in brackets", addr)
	}
	if why := hostname.SyntaxProblem(host); why != "" {
		return fmt.Sprintf("%q: host %s (use a lower-case host name or an IP address)", addr, why)
	}
	return ""
}
