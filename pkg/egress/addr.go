package egress

import "net/netip"

type addrBlock struct {
	prefix netip.Prefix
	why    string
}

func mustBlocks(specs ...[2]string) []addrBlock {
	out := make([]addrBlock, 0, len(specs))
	for _, s := range specs {
		out = append(out, addrBlock{netip.MustParsePrefix(s[0]), s[0] + " " + s[1]})
	}
	return out
}

// refusedV4 is the IPv4 special-purpose list, exactly (IANA registry entries that
// are not globally reachable, plus multicast and the reserved class E).
var refusedV4 = mustBlocks(
	[2]string{"0.0.0.0/8", "(this network)"},
	[2]string{"10.0.0.0/8", "(private)"},
	[2]string{"100.64.0.0/10", "(shared address space, CGNAT)"},
	[2]string{"127.0.0.0/8", "(loopback)"},
	[2]string{"169.254.0.0/16", "(link-local)"},
	[2]string{"172.16.0.0/12", "(private)"},
	[2]string{"192.0.0.0/24", "(IETF protocol assignments)"},
	[2]string{"192.0.2.0/24", "(documentation, TEST-NET-1)"},
	[2]string{"192.31.196.0/24", "(AS112-v4)"},
	[2]string{"192.52.193.0/24", "(AMT)"},
	[2]string{"192.88.99.0/24", "(deprecated 6to4 relay anycast)"},
	[2]string{"192.168.0.0/16", "(private)"},
	[2]string{"192.175.48.0/24", "(direct delegation AS112)"},
	[2]string{"198.18.0.0/15", "(benchmarking)"},
	[2]string{"198.51.100.0/24", "(documentation, TEST-NET-2)"},
	[2]string{"203.0.113.0/24", "(documentation, TEST-NET-3)"},
	[2]string{"224.0.0.0/4", "(multicast)"},
	[2]string{"240.0.0.0/4", "(reserved, incl. broadcast)"},
)

// globalV6 is the only IPv6 space that may be dialled; everything outside it (::, ::1,
// 64:ff9b::/96 NAT64, 100::/64, 5f00::/16, fc00::/7, fe80::/10, fec0::/10, ff00::/8, …) is
// refused without a table entry of its own.
var globalV6 = netip.MustParsePrefix("2000::/3")

// refusedV6 are the special-purpose blocks inside 2000::/3. 2001::/23 covers Teredo
// (2001::/32) and ORCHIDv2; 2002::/16 (6to4) embeds an IPv4 address we refuse to trust.
var refusedV6 = mustBlocks(
	[2]string{"2001::/23", "(IETF protocol assignments, incl. Teredo)"},
	[2]string{"2001:db8::/32", "(documentation)"},
	[2]string{"2002::/16", "(6to4)"},
	[2]string{"2620:4f:8000::/48", "(direct delegation AS112)"},
	[2]string{"3fff::/20", "(documentation)"},
)

// ClassifyAddr says whether a resolved address may be dialled for a tunnel (H5). It is pure:
// the same address always gets the same answer. why names the refused block (or the reason
// the address is unusable) and is empty when ok.
func ClassifyAddr(a netip.Addr) (ok bool, why string) {
	if !a.IsValid() {
		return false, "invalid address"
	}
	if a.Zone() != "" {
		// A zone only means something for link-scoped addresses; never dial one.
		return false, "address with an IPv6 zone"
	}
	if a.Is4In6() {
		// ::ffff:a.b.c.d reaches a.b.c.d over an IPv4 socket: judge the IPv4 address.
		a = a.Unmap()
	}
	if a.Is4() {
		for _, b := range refusedV4 {
			if b.prefix.Contains(a) {
				return false, b.why
			}
		}
		return true, ""
	}
	if !globalV6.Contains(a) {
		return false, "outside 2000::/3 (not global unicast IPv6)"
	}
	for _, b := range refusedV6 {
		if b.prefix.Contains(a) {
			return false, b.why
		}
	}
	return true, ""
}
