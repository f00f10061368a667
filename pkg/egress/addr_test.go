package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// TestClassifyAddr covers every block of the special-purpose list (H5) with its first and last
// address, the addresses just outside, IPv4-mapped forms and the IPv6 ranges that embed IPv4
// (6to4, NAT64, Teredo, IPv4-compatible).
func TestClassifyAddr(t *testing.T) {
	cases := []struct {
		name string
		addr string
		ok   bool
		why  string // substring of why when refused
	}{
		{"this network first", "0.0.0.0", false, "0.0.0.0/8"},
		{"this network last (0.0.0.1 is global unicast to Go)", "0.255.255.255", false, "0.0.0.0/8"},
		{"just after this network", "1.0.0.0", true, ""},
		{"private 10 first", "10.0.0.0", false, "10.0.0.0/8"},
		{"private 10 last", "10.255.255.255", false, "10.0.0.0/8"},
		{"just before 10", "9.255.255.255", true, ""},
		{"just after 10", "11.0.0.0", true, ""},
		{"CGNAT first", "100.64.0.0", false, "100.64.0.0/10"},
		{"CGNAT last", "100.127.255.255", false, "100.64.0.0/10"},
		{"just before CGNAT", "100.63.255.255", true, ""},
		{"just after CGNAT", "100.128.0.0", true, ""},
		{"loopback first", "127.0.0.0", false, "127.0.0.0/8"},
		{"loopback 127.0.0.1", "127.0.0.1", false, "loopback"},
		{"loopback last", "127.255.255.255", false, "127.0.0.0/8"},
		{"just before loopback", "126.255.255.255", true, ""},
		{"just after loopback", "128.0.0.0", true, ""},
		{"link-local first", "169.254.0.0", false, "169.254.0.0/16"},
		{"cloud metadata", "169.254.169.254", false, "link-local"},
		{"link-local last", "169.254.255.255", false, "169.254.0.0/16"},
		{"just before link-local", "169.253.255.255", true, ""},
		{"just after link-local", "169.255.0.0", true, ""},
		{"private 172 first", "172.16.0.0", false, "172.16.0.0/12"},
		{"private 172 last", "172.31.255.255", false, "172.16.0.0/12"},
		{"just before 172.16", "172.15.255.255", true, ""},
		{"just after 172.31", "172.32.0.0", true, ""},
		{"IETF 192.0.0 first", "192.0.0.0", false, "192.0.0.0/24"},
		{"IETF 192.0.0 last", "192.0.0.255", false, "192.0.0.0/24"},
		{"just after 192.0.0", "192.0.1.0", true, ""},
		{"TEST-NET-1 first", "192.0.2.0", false, "192.0.2.0/24"},
		{"TEST-NET-1 last", "192.0.2.255", false, "192.0.2.0/24"},
		{"just after TEST-NET-1", "192.0.3.0", true, ""},
		{"AS112 first", "192.31.196.0", false, "192.31.196.0/24"},
		{"AS112 last", "192.31.196.255", false, "192.31.196.0/24"},
		{"just before AS112", "192.31.195.255", true, ""},
		{"AMT first", "192.52.193.0", false, "192.52.193.0/24"},
		{"AMT last", "192.52.193.255", false, "192.52.193.0/24"},
		{"just after AMT", "192.52.194.0", true, ""},
		{"6to4 relay first", "192.88.99.0", false, "192.88.99.0/24"},
		{"6to4 relay last", "192.88.99.255", false, "192.88.99.0/24"},
		{"just before 6to4 relay", "192.88.98.255", true, ""},
		{"private 192.168 first", "192.168.0.0", false, "192.168.0.0/16"},
		{"private 192.168 last", "192.168.255.255", false, "192.168.0.0/16"},
		{"just before 192.168", "192.167.255.255", true, ""},
		{"just after 192.168", "192.169.0.0", true, ""},
		{"AS112 direct first", "192.175.48.0", false, "192.175.48.0/24"},
		{"AS112 direct last", "192.175.48.255", false, "192.175.48.0/24"},
		{"just after AS112 direct", "192.175.49.0", true, ""},
		{"benchmarking first", "198.18.0.0", false, "198.18.0.0/15"},
		{"benchmarking last", "198.19.255.255", false, "198.18.0.0/15"},
		{"just before benchmarking", "198.17.255.255", true, ""},
		{"just after benchmarking", "198.20.0.0", true, ""},
		{"TEST-NET-2 first", "198.51.100.0", false, "198.51.100.0/24"},
		{"TEST-NET-2 last", "198.51.100.255", false, "198.51.100.0/24"},
		{"just after TEST-NET-2", "198.51.101.0", true, ""},
		{"TEST-NET-3 first", "203.0.113.0", false, "203.0.113.0/24"},
		{"TEST-NET-3 last", "203.0.113.255", false, "203.0.113.0/24"},
		{"just before TEST-NET-3", "203.0.112.255", true, ""},
		{"multicast first", "224.0.0.0", false, "224.0.0.0/4"},
		{"multicast last", "239.255.255.255", false, "224.0.0.0/4"},
		{"just before multicast", "223.255.255.255", true, ""},
		{"reserved first", "240.0.0.0", false, "240.0.0.0/4"},
		{"broadcast", "255.255.255.255", false, "240.0.0.0/4"},
		{"public v4", "151.101.0.223", true, ""},

		{"mapped loopback", "::ffff:127.0.0.1", false, "127.0.0.0/8"},
		{"mapped private", "::ffff:10.1.2.3", false, "10.0.0.0/8"},
		{"mapped metadata", "::ffff:169.254.169.254", false, "169.254.0.0/16"},
		{"mapped public", "::ffff:151.101.0.223", true, ""},
		{"IPv4-compatible loopback", "::127.0.0.1", false, "2000::/3"},
		{"unspecified v6", "::", false, "2000::/3"},
		{"loopback v6", "::1", false, "2000::/3"},
		{"NAT64 well-known", "64:ff9b::7f00:1", false, "2000::/3"},
		{"NAT64 public embedded", "64:ff9b::9765:df", false, "2000::/3"},
		{"NAT64 local-use", "64:ff9b:1::1", false, "2000::/3"},
		{"discard-only", "100::1", false, "2000::/3"},
		{"SRv6 SIDs", "5f00::1", false, "2000::/3"},
		{"unique local first", "fc00::", false, "2000::/3"},
		{"unique local fd", "fd12:3456::1", false, "2000::/3"},
		{"link-local v6", "fe80::1", false, "2000::/3"},
		{"link-local v6 with zone", "fe80::1%eth0", false, "zone"},
		{"site-local v6", "fec0::1", false, "2000::/3"},
		{"multicast v6", "ff02::1", false, "2000::/3"},
		{"just before 2000::/3", "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "2000::/3"},
		{"just after 2000::/3", "4000::", false, "2000::/3"},
		{"first of 2000::/3", "2000::", true, ""},
		{"IETF 2001::/23 first (Teredo)", "2001::", false, "2001::/23"},
		{"Teredo embedding 127.0.0.1", "2001:0:4136:e378:8000:63bf:80ff:fffe", false, "2001::/23"},
		{"IETF 2001::/23 last", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", false, "2001::/23"},
		{"just after 2001::/23", "2001:200::", true, ""},
		{"documentation 2001:db8", "2001:db8::1", false, "2001:db8::/32"},
		{"just after 2001:db8", "2001:db9::", true, ""},
		{"6to4 embedding 127.0.0.1", "2002:7f00:1::1", false, "2002::/16"},
		{"6to4 embedding public", "2002:9765:df::1", false, "2002::/16"},
		{"just after 6to4", "2003::", true, ""},
		{"AS112 v6", "2620:4f:8000::1", false, "2620:4f:8000::/48"},
		{"just after AS112 v6", "2620:4f:8001::", true, ""},
		{"documentation 3fff::/20", "3fff::1", false, "3fff::/20"},
		{"documentation 3fff::/20 last", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", false, "3fff::/20"},
		{"just after 3fff::/20", "3fff:1000::", true, ""},
		{"last of 2000::/3", "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"public v6", "2606:4700::6810:84e5", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := netip.MustParseAddr(c.addr)
			ok, why := ClassifyAddr(a)
			if ok != c.ok {
				t.Fatalf("ClassifyAddr(%s) = %v (%q), want %v", c.addr, ok, why, c.ok)
			}
			if c.ok && why != "" {
				t.Errorf("ClassifyAddr(%s) why = %q, want empty", c.addr, why)
			}
			if !c.ok && !strings.Contains(why, c.why) {
				t.Errorf("ClassifyAddr(%s) why = %q, want it to name %q", c.addr, why, c.why)
			}
		})
	}
	t.Run("invalid address", func(t *testing.T) {
		if ok, _ := ClassifyAddr(netip.Addr{}); ok {
			t.Fatal("ClassifyAddr(zero Addr) = true, want false")
		}
	})
}
