package egress

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func lookupAll(t *testing.T, r *dnsResolver, host string) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	var out []string
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out, err
}

// TestDNSResolver: the default resolver asks DNS for exactly the FQDN (no search domains, no
// /etc/hosts), follows only the CNAME chain of the name, and survives truncation and a
// reply with a wrong ID or for another question (H5).
func TestDNSResolver(t *testing.T) {
	cases := []struct {
		name      string
		setup     func(d *fakeDNS)
		host      string
		want      []string
		wantAsked []string
		wantErr   string
	}{
		{
			name: "A and AAAA for the FQDN only",
			setup: func(d *fakeDNS) {
				d.addIP("pypi.org.", "151.101.0.223")
				d.addIP("pypi.org.", "2a04:4e42::223")
			},
			host:      "pypi.org",
			want:      []string{"151.101.0.223", "2a04:4e42::223"},
			wantAsked: []string{"pypi.org. A", "pypi.org. AAAA"},
		},
		{
			name: "AAAA only",
			setup: func(d *fakeDNS) {
				d.addIP("v6.example.com.", "2606:4700::6810:84e5")
			},
			host: "v6.example.com",
			want: []string{"2606:4700::6810:84e5"},
		},
		{
			name: "CNAME chain followed, unrelated records dropped",
			setup: func(d *fakeDNS) {
				d.add("files.pythonhosted.org.", &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("cdn.fastly.net.")})
				d.addIP("cdn.fastly.net.", "151.101.64.223")
				// Stuffed into every answer under another name, as a poisoning attempt.
				d.addUnder("*", "evil.example.com.", &dnsmessage.AResource{A: [4]byte{10, 0, 0, 1}})
			},
			host: "files.pythonhosted.org",
			want: []string{"151.101.64.223"},
		},
		{
			name: "truncated UDP answer retried over TCP",
			setup: func(d *fakeDNS) {
				d.set(func(d *fakeDNS) { d.truncUDP = true })
				d.addIP("pypi.org.", "151.101.0.223")
			},
			host: "pypi.org",
			want: []string{"151.101.0.223"},
		},
		{
			name: "reply with a wrong ID ignored",
			setup: func(d *fakeDNS) {
				d.set(func(d *fakeDNS) { d.spoof = true })
				d.addIP("pypi.org.", "151.101.0.223")
			},
			host: "pypi.org",
			want: []string{"151.101.0.223"},
		},
		{
			name: "reply for another question ignored",
			setup: func(d *fakeDNS) {
				d.set(func(d *fakeDNS) { d.spoofQ = true })
				d.addIP("pypi.org.", "151.101.0.223")
			},
			host: "pypi.org",
			want: []string{"151.101.0.223"},
		},
		{
			name:    "NXDOMAIN",
			setup:   func(d *fakeDNS) { d.set(func(d *fakeDNS) { d.rcode = dnsmessage.RCodeNameError }) },
			host:    "nothing.example.com",
			wantErr: "no such host",
		},
		{
			name:    "no records",
			setup:   func(d *fakeDNS) {},
			host:    "empty.example.com",
			wantErr: "no such host",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := startFakeDNS(t)
			c.setup(d)
			r := &dnsResolver{servers: []string{d.addr}, timeout: 10 * time.Second}
			got, err := lookupAll(t, r, c.host)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("LookupNetIP(%s) = %v, %v, want error %q", c.host, got, err, c.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("LookupNetIP(%s) = %v, %v, want %v", c.host, got, err, c.want)
			}
			// A and AAAA go out in parallel: compare the questions as a set.
			if c.wantAsked != nil && !slices.Equal(slices.Sorted(slices.Values(d.questions())), c.wantAsked) {
				t.Errorf("questions asked = %v, want %v", d.questions(), c.wantAsked)
			}
		})
	}
}

// TestDNSResolverIgnoresEtcHosts: /etc/hosts maps localhost to loopback for Go's resolver,
// but the egress resolver takes the answer from DNS only (H5; Go's resolver reads /etc/hosts first).
func TestDNSResolverIgnoresEtcHosts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	goAddrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", "localhost")
	if err != nil || len(goAddrs) == 0 || !goAddrs[0].IsLoopback() {
		t.Fatalf("precondition: Go's resolver(localhost) = %v, %v, want loopback from /etc/hosts", goAddrs, err)
	}
	d := startFakeDNS(t)
	d.addIP("localhost.", "151.101.0.223")
	r := &dnsResolver{servers: []string{d.addr}, timeout: 10 * time.Second}
	got, err := lookupAll(t, r, "localhost")
	if err != nil || !slices.Equal(got, []string{"151.101.0.223"}) {
		t.Fatalf("dnsResolver(localhost) = %v, %v, want [151.101.0.223] from DNS", got, err)
	}
	if q := d.questions(); !slices.Contains(q, "localhost. A") {
		t.Fatalf("questions asked = %v, want localhost. A", q)
	}
}

// TestDNSResolverFailover: a server that fails is skipped; one that says NXDOMAIN is final.
func TestDNSResolverFailover(t *testing.T) {
	bad := startFakeDNS(t)
	bad.set(func(d *fakeDNS) { d.rcode = dnsmessage.RCodeServerFailure })
	good := startFakeDNS(t)
	good.addIP("pypi.org.", "151.101.0.223")
	r := &dnsResolver{servers: []string{bad.addr, good.addr}, timeout: 10 * time.Second}
	got, err := lookupAll(t, r, "pypi.org")
	if err != nil || !slices.Equal(got, []string{"151.101.0.223"}) {
		t.Fatalf("LookupNetIP(pypi.org) = %v, %v, want [151.101.0.223]", got, err)
	}
	nx := startFakeDNS(t)
	nx.set(func(d *fakeDNS) { d.rcode = dnsmessage.RCodeNameError })
	r = &dnsResolver{servers: []string{nx.addr, good.addr}, timeout: 10 * time.Second}
	if got, err := lookupAll(t, r, "pypi.org"); !errors.Is(err, errNoSuchHost) {
		t.Fatalf("LookupNetIP(pypi.org) after NXDOMAIN = %v, %v, want no such host", got, err)
	}
}

// TestDNSResolverDropsAAAA (H5): a name server that never answers AAAA questions does not fail
// a name whose A answer is good; the AAAA question is retried once, not more.
func TestDNSResolverDropsAAAA(t *testing.T) {
	d := startFakeDNS(t)
	d.set(func(d *fakeDNS) { d.dropAAAA = true })
	d.addIP("pypi.org.", "151.101.0.223")
	d.addIP("pypi.org.", "2a04:4e42::223")
	r := &dnsResolver{servers: []string{d.addr}, timeout: 300 * time.Millisecond}
	got, err := lookupAll(t, r, "pypi.org")
	if err != nil || !slices.Equal(got, []string{"151.101.0.223"}) {
		t.Fatalf("LookupNetIP(pypi.org) with AAAA dropped = %v, %v, want the A answer", got, err)
	}
	want := []string{"pypi.org. A", "pypi.org. AAAA", "pypi.org. AAAA"}
	if q := slices.Sorted(slices.Values(d.questions())); !slices.Equal(q, want) {
		t.Fatalf("questions = %v, want %v (A once, AAAA and one retry)", q, want)
	}
	// With both dropped the name fails, naming the timeouts rather than "no such host".
	d.set(func(d *fakeDNS) { d.dropFirst[dnsmessage.TypeA] = 2 })
	if got, err := lookupAll(t, r, "pypi.org"); err == nil || errors.Is(err, errNoSuchHost) {
		t.Fatalf("LookupNetIP with every question dropped = %v, %v, want a timeout error", got, err)
	}
}

// TestDNSResolverRetriesOnce: a lost first question is asked again and answered.
func TestDNSResolverRetriesOnce(t *testing.T) {
	d := startFakeDNS(t)
	d.set(func(d *fakeDNS) { d.dropFirst[dnsmessage.TypeA] = 1 })
	d.addIP("pypi.org.", "151.101.0.223")
	r := &dnsResolver{servers: []string{d.addr}, timeout: 300 * time.Millisecond}
	got, err := lookupAll(t, r, "pypi.org")
	if err != nil || !slices.Equal(got, []string{"151.101.0.223"}) {
		t.Fatalf("LookupNetIP(pypi.org) with the first A lost = %v, %v, want the retried answer", got, err)
	}
	if n := slices.Index(d.questions(), "pypi.org. A"); n < 0 || len(slices.DeleteFunc(d.questions(), func(q string) bool { return q != "pypi.org. A" })) != 2 {
		t.Fatalf("questions = %v, want A asked twice", d.questions())
	}
}

// TestDNSResolverAsksInParallel: the server answers A only once it has seen the AAAA question,
// so a resolver that waited for A before asking AAAA would get no address at all.
func TestDNSResolverAsksInParallel(t *testing.T) {
	d := startFakeDNS(t)
	d.set(func(d *fakeDNS) { d.holdA = true })
	d.addIP("pypi.org.", "151.101.0.223")
	r := &dnsResolver{servers: []string{d.addr}, timeout: 2 * time.Second}
	got, err := lookupAll(t, r, "pypi.org")
	if err != nil || !slices.Equal(got, []string{"151.101.0.223"}) {
		t.Fatalf("LookupNetIP(pypi.org) = %v, %v, want the A answer (A and AAAA asked at once)", got, err)
	}
}

func TestParseNameservers(t *testing.T) {
	cases := []struct {
		name, conf string
		want       []string
		wantErr    bool
	}{
		{"debian", "nameserver 10.255.255.53\n", []string{"10.255.255.53:53"}, false},
		{"search and options ignored", "search corp.example\noptions ndots:5\nnameserver 1.1.1.1\nnameserver 2606:4700:4700::1111\n", []string{"1.1.1.1:53", "[2606:4700:4700::1111]:53"}, false},
		{"none", "search x\n", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseNameservers(strings.NewReader(c.conf))
			if (err != nil) != c.wantErr || !slices.Equal(got, c.want) {
				t.Fatalf("parseNameservers(%q) = %v, %v, want %v (err %v)", c.conf, got, err, c.want, c.wantErr)
			}
		})
	}
}

// TestDefaultResolverIsDNSOnly: with no Resolver given, the proxy uses the DNS-only stub over
// /etc/resolv.conf's name servers, never Go's resolver (which reads /etc/hosts), and builds
// whatever that file holds now (H5).
func TestDefaultResolverIsDNSOnly(t *testing.T) {
	p, err := NewProxy(Policy{Allow: []string{"pypi.org"}}, Options{})
	if err != nil {
		t.Fatalf("NewProxy with the default resolver: %v", err)
	}
	r, ok := p.resolver.(*fileResolver)
	if !ok || r.path != "/etc/resolv.conf" || r.timeout <= 0 {
		t.Fatalf("default resolver = %T %+v, want *fileResolver over /etc/resolv.conf", p.resolver, p.resolver)
	}
}
