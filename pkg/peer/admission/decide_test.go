package admission

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
)

var testLimits = Limits{
	Pending: 10, PendingVouched: 4, PendingPerSource: 3,
	AcceptPerSource: Rate{Burst: 5, PerMinute: 60}, AcceptStrangers: Rate{Burst: 20, PerMinute: 600},
	Handshake: 10 * time.Second, HandshakePressed: 2 * time.Second,
	Strangers: 6, StrangersPerSource: 2, Peers: 4, PerIdentity: 2, IdlePressed: 5 * time.Second,
}

// N1, before TLS: each layer refuses on its own, in order, and a full shared pool evicts
// instead of refusing.
func TestDecideArrival(t *testing.T) {
	ok := arrival{SourceRateOK: true, StrangerRateOK: true}
	for _, tc := range []struct {
		name string
		in   arrival
		want arrivalVerdict
	}{
		{"quiet node", ok, arrivalVerdict{Admit: true, Pool: poolPending}},
		{"source over its accept rate", arrival{StrangerRateOK: true}, arrivalVerdict{Reason: SourceRate}},
		{"vouched source over its own rate", arrival{Vouched: true, StrangerRateOK: true}, arrivalVerdict{Reason: SourceRate}},
		{"strangers' accept rate spent", arrival{SourceRateOK: true}, arrivalVerdict{Reason: StrangersRate}},
		{"vouched source ignores the strangers' rate", arrival{Vouched: true, SourceRateOK: true}, arrivalVerdict{Admit: true, Pool: poolPendingVouched}},
		{"source at its handshake cap", arrival{SourceRateOK: true, StrangerRateOK: true, SourcePending: 3}, arrivalVerdict{Reason: SourcePending}},
		{"just under the handshake cap", arrival{SourceRateOK: true, StrangerRateOK: true, SourcePending: 2}, arrivalVerdict{Admit: true, Pool: poolPending}},
		{"shared pool full: evict, never refuse", arrival{SourceRateOK: true, StrangerRateOK: true, Pending: 10}, arrivalVerdict{Admit: true, Pool: poolPending, NeedVictim: true}},
		{"vouched: reserved pool while the shared one is full", arrival{Vouched: true, SourceRateOK: true, Pending: 10}, arrivalVerdict{Admit: true, Pool: poolPendingVouched}},
		{"vouched: reserved pool full, overflow into the shared one", arrival{Vouched: true, SourceRateOK: true, PendingVouched: 4, Pending: 3}, arrivalVerdict{Admit: true, Pool: poolPending}},
		{"vouched: both full", arrival{Vouched: true, SourceRateOK: true, PendingVouched: 4, Pending: 10}, arrivalVerdict{Admit: true, Pool: poolPending, NeedVictim: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideArrival(tc.in, testLimits); got != tc.want {
				t.Fatalf("decideArrival(%+v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

// N1, after TLS: the pool follows the class; caps ask for an idle victim in their scope.
func TestDecideEstablished(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   established
		want establishedVerdict
	}{
		{"stranger, room", established{Class: Stranger}, establishedVerdict{Pool: poolStrangers}},
		{"known, room", established{Class: Known}, establishedVerdict{Pool: poolPeers}},
		{"trusted, room", established{Class: Trusted}, establishedVerdict{Pool: poolPeers}},
		{"known while strangers fill theirs", established{Class: Known, Strangers: 6, SourceStrangers: 2}, establishedVerdict{Pool: poolPeers}},
		{"trusted while strangers fill theirs", established{Class: Trusted, Strangers: 600}, establishedVerdict{Pool: poolPeers}},
		{"stranger at its key cap", established{Class: Stranger, IdentityConns: 2}, establishedVerdict{Pool: poolStrangers, Victims: []victimScope{sameIdentity}}},
		{"trusted at its key cap", established{Class: Trusted, IdentityConns: 2}, establishedVerdict{Pool: poolPeers, Victims: []victimScope{sameIdentity}}},
		{"stranger at its source cap", established{Class: Stranger, SourceStrangers: 2}, establishedVerdict{Pool: poolStrangers, Victims: []victimScope{sameSource}}},
		{"known ignores the strangers' source cap", established{Class: Known, SourceStrangers: 5}, establishedVerdict{Pool: poolPeers}},
		{"strangers' pool full", established{Class: Stranger, Strangers: 6}, establishedVerdict{Pool: poolStrangers, Victims: []victimScope{samePool}}},
		{"peers' pool full", established{Class: Known, Peers: 4}, establishedVerdict{Pool: poolPeers, Victims: []victimScope{samePool}}},
		{"every cap at once", established{Class: Stranger, IdentityConns: 2, SourceStrangers: 2, Strangers: 6}, establishedVerdict{Pool: poolStrangers, Victims: []victimScope{sameIdentity, sameSource, samePool}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideEstablished(tc.in, testLimits)
			if got.Pool != tc.want.Pool || !slices.Equal(got.Victims, tc.want.Victims) {
				t.Fatalf("decideEstablished(%+v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestPickVictim(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name string
		cs   []candidate
		want int
	}{
		{"none", nil, -1},
		{"silent before heard, even if younger", []candidate{{Since: t0}, {Silent: true, Since: t0.Add(time.Second)}}, 1},
		{"stranger before known", []candidate{{Class: Known, Since: t0}, {Class: Stranger, Since: t0.Add(time.Second)}}, 1},
		{"known before trusted", []candidate{{Class: Trusted, Since: t0}, {Class: Known, Since: t0.Add(time.Second)}}, 1},
		{"heaviest source first", []candidate{{SourceLoad: 1, Since: t0}, {SourceLoad: 7, Since: t0.Add(time.Second)}}, 1},
		{"then the oldest", []candidate{{SourceLoad: 3, Since: t0.Add(time.Second)}, {SourceLoad: 3, Since: t0}}, 1},
		{"silence outranks load", []candidate{{SourceLoad: 50, Since: t0}, {Silent: true, SourceLoad: 1, Since: t0}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pickVictim(tc.cs)
			if !ok {
				got = -1
			}
			if got != tc.want {
				t.Fatalf("pickVictim = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestHandshakeLimitTightensUnderPressure(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{0, 10 * time.Second}, {5, 10 * time.Second}, {6, 2 * time.Second}, {10, 2 * time.Second}} {
		if got := handshakeLimit(tc.n, 10, testLimits); got != tc.want {
			t.Errorf("handshakeLimit(%d of 10) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

func TestSourceOf(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 4000}, "192.0.2.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 4000}, "192.0.2.7/32"}, // mapped: the IPv4 host
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 4000}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::1"), Port: 1}, "2001:db8:1:2::/64"}, // same /64, same source
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:3::1"), Port: 1}, "2001:db8:1:3::/64"},      // next /64, another source
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 1, Zone: "lo"}, "fe80::/64"},
		{&net.UnixAddr{Name: "@x", Net: "unix"}, "invalid Prefix"},
	} {
		if got := SourceOf(tc.addr).String(); got != tc.want {
			t.Errorf("SourceOf(%v) = %s, want %s", tc.addr, got, tc.want)
		}
	}
	if SourceOfIP(netip.MustParseAddr("10.0.0.1")) == SourceOfIP(netip.MustParseAddr("10.0.0.2")) {
		t.Error("two IPv4 hosts share a source")
	}
}
