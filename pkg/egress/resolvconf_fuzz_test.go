package egress

import (
	"bufio"
	"net/netip"
	"strings"
	"testing"
)

// FuzzParseNameservers: an operator's (or a network manager's) resolv.conf becomes the name
// servers the tunnels' lookups ask (H5). Whatever the file holds, every server is an IP
// address on port 53 named by a `nameserver` line of the file, in the file's order, and a file
// with none is an error, never an empty list.
func FuzzParseNameservers(f *testing.F) {
	for _, s := range []string{
		"nameserver 127.0.0.1\n",
		"# offline\nsearch example.internal\n",
		"nameserver 10.0.0.2\nnameserver fe80::1%eth0\nnameserver ::1\noptions ndots:2\n",
		"nameserver\tnot-an-address\nnameserver 192.0.2.1 extra\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, conf string) {
		got, err := parseNameservers(strings.NewReader(conf))
		// What the file names, by the same reading of lines (a line too long for the scanner
		// ends the file with an error either way).
		var want []string
		sc := bufio.NewScanner(strings.NewReader(conf))
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 && fs[0] == "nameserver" {
				if a, perr := netip.ParseAddr(fs[1]); perr == nil {
					want = append(want, netip.AddrPortFrom(a, 53).String())
				}
			}
		}
		if sc.Err() != nil {
			if err == nil {
				t.Fatalf("a file the scanner cannot read gave %v and no error", got)
			}
			return
		}
		if len(want) == 0 {
			if err == nil || len(got) != 0 {
				t.Fatalf("no nameserver line: got %v, %v, want an error", got, err)
			}
			return
		}
		if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("parseNameservers = %v, %v, want %v", got, err, want)
		}
		for _, s := range got {
			ap, perr := netip.ParseAddrPort(s)
			if perr != nil || ap.Port() != 53 {
				t.Fatalf("server %q is not an address on port 53", s)
			}
		}
	})
}
