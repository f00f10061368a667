//go:build anettest && linux

package egress

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/pkg/dialer"
)

// startBlackhole returns a loopback address that drops every SYN sent to it: a listener with
// an accept queue of one that is already full and never accepted. A connection attempt to it
// hangs like one to a host that drops packets (the kernel drops SYNs to a full queue).
func startBlackhole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	// Fill the queue: this connection completes and is never accepted.
	filler, err := dialer.Dial(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatalf("fill the blackhole's queue: %v", err)
	}
	t.Cleanup(func() { filler.Close() })
	return addr
}

// TestHappyEyeballsPastAnAddressThatDropsPackets (H5, RFC 8305): pypi.org's first address
// drops every packet; the tunnel connects through the next one (the IPv6 address, or with
// AAAA dropped by the name server, the second IPv4 address) within the same budget. One
// attempt may take longer than the whole budget here, so a proxy that dialled the addresses
// one after the other would fail the tunnel.
func TestHappyEyeballsPastAnAddressThatDropsPackets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dropped func(d *fakeDNS)
	}{
		{"both families answered", func(*fakeDNS) {}},
		{"name server drops AAAA", func(d *fakeDNS) { d.dropAAAA = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := startTLSUpstream(t)
			redirectTo(t, pypiIP+":443", startBlackhole(t))
			redirectTo(t, "["+pypiIPv6+"]:443", up.addr)
			redirectTo(t, filesIP+":443", up.addr)
			d := startFakeDNS(t)
			d.addIP("pypi.org.", pypiIP)
			d.addIP("pypi.org.", filesIP)
			d.addIP("pypi.org.", pypiIPv6)
			d.set(tc.dropped)
			res := &dnsResolver{servers: []string{d.addr}, timeout: time.Second}
			tp := startProxy(t, Policy{Allow: []string{"pypi.org"}, Limits: Limits{ConnectTimeout: time.Hour, ResolveConnectTimeout: 8 * time.Second}}, res)
			body, err := get(t, httpsVia(t, tp), "https://pypi.org/")
			if err != nil || body != "upstream saw pypi.org /" {
				t.Fatalf("GET https://pypi.org/ = %q, %v, want the upstream's answer through the second address", body, err)
			}
			if n := up.conns.Load(); n != 1 {
				t.Fatalf("upstream got %d connections, want 1", n)
			}
		})
	}
}

// RFC 8305 §4: families alternate, starting with the resolver's first.
func TestInterleave(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"2001:db8::1", "2001:db8::2", "192.0.2.1", "192.0.2.2"}, []string{"2001:db8::1", "192.0.2.1", "2001:db8::2", "192.0.2.2"}},
		{[]string{"192.0.2.1", "192.0.2.2", "2001:db8::1"}, []string{"192.0.2.1", "2001:db8::1", "192.0.2.2"}},
		{[]string{"::ffff:192.0.2.1", "2001:db8::1"}, []string{"192.0.2.1", "2001:db8::1"}},
		{[]string{"192.0.2.1"}, []string{"192.0.2.1"}},
	} {
		var got []string
		for _, a := range interleave(addrs(tc.in...)) {
			got = append(got, a.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("interleave(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// A refused attempt starts the next address at once, without waiting for the attempt delay;
// with every address failing, the error names each.
func TestDialHappyNextAtOnceOnFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now: a connection is refused at once
	good := startSink(t)
	redirectTo(t, "192.0.2.10:443", closed)
	redirectTo(t, "192.0.2.11:443", good.addr)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, ap, err := dialHappy(ctx, addrs("192.0.2.10", "192.0.2.11"), 443, dialPlan{delay: time.Hour, attempt: time.Hour})
	if err != nil {
		t.Fatalf("dialHappy(refused, good) = %v; the refusal should have started the second attempt at once", err)
	}
	c.Close()
	if ap.String() != "192.0.2.11:443" {
		t.Fatalf("connected to %s, want the second address", ap)
	}
	redirectTo(t, "192.0.2.11:443", closed)
	_, _, err = dialHappy(ctx, addrs("192.0.2.10", "192.0.2.11"), 443, dialPlan{delay: time.Hour, attempt: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "192.0.2.10:443") || !strings.Contains(err.Error(), "192.0.2.11:443") {
		t.Fatalf("dialHappy with both refused = %v, want an error naming both addresses", err)
	}
}
