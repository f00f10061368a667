// Package admission decides which peer connections the listener keeps (N1): per source
// address before any TLS work, per identity and per class of peer after the handshake, with
// room reserved for the peers the operator knows that strangers cannot take.
//
// The decisions are pure functions over counts (decide.go), tested as tables; Table holds the
// counts and applies the decisions under one mutex; the listener in pkg/peer only accepts,
// asks, and closes what it is told to. Nothing here touches a socket.
//
// Before the handshake a connection is known only by its source: an IPv4 address, or the /64
// of an IPv6 address (one host usually holds a whole /64). A source is "vouched" when the
// operator's peers table names its address or a known or trusted peer authenticated from it
// recently; vouched sources have their own handshake slots and skip the strangers' accept
// rate. After the handshake the peer's key says its class: trusted (trust list), known (peers
// table) or stranger.
package admission

import (
	"net"
	"net/netip"
	"time"
)

// Class is what the operator's tables say about a peer key.
type Class uint8

// Classes, from least to most trusted.
const (
	Stranger Class = iota // in neither the peers table nor the trust list
	Known                 // in the peers table
	Trusted               // in the trust list
)

func (c Class) String() string {
	switch c {
	case Known:
		return "known"
	case Trusted:
		return "trusted"
	}
	return "stranger"
}

// Source is the unit connections are counted by before the handshake: an IPv4 address (/32)
// or an IPv6 /64.
type Source = netip.Prefix

// SourceOf returns the source of a remote address; an IPv4-mapped IPv6 address counts as the
// IPv4 address. An address that is not IP (a test pipe) is the zero Source.
func SourceOf(a net.Addr) Source {
	var ip netip.Addr
	switch t := a.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(t.IP)
	case *net.UDPAddr:
		ip, _ = netip.AddrFromSlice(t.IP)
	default:
		if a == nil {
			return Source{}
		}
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return Source{}
		}
		ip = ap.Addr()
	}
	return SourceOfIP(ip)
}

// SourceOfIP is SourceOf for a bare address.
func SourceOfIP(ip netip.Addr) Source {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return Source{}
	}
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// ParseSource reads a Source back from its String form ("192.0.2.7/32", "2001:db8::/64").
func ParseSource(s string) (Source, error) { return netip.ParsePrefix(s) }

// Limits are every cap, rate and timeout of admission. The package doc of pkg/peer lists
// them for implementers; DefaultLimits are the values there.
type Limits struct {
	// Pending is how many handshakes from sources that are not vouched may be in progress
	// at once; a new one beyond it evicts the least promising (see pickVictim).
	Pending int
	// PendingVouched is reserved for vouched sources: strangers never use it.
	PendingVouched int
	// PendingPerSource caps handshakes in progress from one source.
	PendingPerSource int
	// AcceptPerSource is each source's rate of new connections.
	AcceptPerSource Rate
	// AcceptStrangers is the rate of new connections from all sources that are not
	// vouched, together: it bounds the TLS work strangers can cause.
	AcceptStrangers Rate
	// Handshake is the time a connection has to complete TLS; HandshakePressed replaces it
	// while the connection's pool is more than half full.
	Handshake, HandshakePressed time.Duration

	// Strangers caps authenticated connections from strangers; StrangersPerSource caps them
	// per source.
	Strangers, StrangersPerSource int
	// Peers caps authenticated connections from known and trusted peers: a pool of its own.
	Peers int
	// PerIdentity caps connections per peer key, whatever its class.
	PerIdentity int
	// IdlePressed is how long a stranger's connection may sit idle between frames while the
	// strangers' pool is more than three quarters full (otherwise the listener's idle
	// timeout applies).
	IdlePressed time.Duration
}

// DefaultLimits are the listener's limits.
var DefaultLimits = Limits{
	Pending:            256,
	PendingVouched:     64,
	PendingPerSource:   8,
	AcceptPerSource:    Rate{Burst: 20, PerMinute: 600},
	AcceptStrangers:    Rate{Burst: 400, PerMinute: 12000},
	Handshake:          10 * time.Second,
	HandshakePressed:   2 * time.Second,
	Strangers:          128,
	StrangersPerSource: 8,
	Peers:              128,
	PerIdentity:        4,
	IdlePressed:        10 * time.Second,
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.Pending, d.Pending)
	set(&l.PendingVouched, d.PendingVouched)
	set(&l.PendingPerSource, d.PendingPerSource)
	set(&l.Strangers, d.Strangers)
	set(&l.StrangersPerSource, d.StrangersPerSource)
	set(&l.Peers, d.Peers)
	set(&l.PerIdentity, d.PerIdentity)
	if l.AcceptPerSource.Burst <= 0 {
		l.AcceptPerSource = d.AcceptPerSource
	}
	if l.AcceptStrangers.Burst <= 0 {
		l.AcceptStrangers = d.AcceptStrangers
	}
	if l.Handshake <= 0 {
		l.Handshake = d.Handshake
	}
	if l.HandshakePressed <= 0 {
		l.HandshakePressed = d.HandshakePressed
	}
	if l.IdlePressed <= 0 {
		l.IdlePressed = d.IdlePressed
	}
	return l
}

// Reason says why a connection was turned away or closed. Reasons are counted and logged in
// a summary line; they are not sent to the peer (there is no frame to carry them).
type Reason string

// Reasons.
const (
	SourceRate     Reason = "source_rate"         // the source opened connections too fast
	StrangersRate  Reason = "strangers_rate"      // sources that are not vouched opened too many together
	SourcePending  Reason = "source_handshakes"   // the source has PendingPerSource handshakes in progress
	Evicted        Reason = "evicted"             // closed to make room for a newer connection
	HandshakeSlow  Reason = "handshake_timeout"   // TLS not complete within the (pressed) deadline
	IdentityConns  Reason = "identity_conns"      // the key has PerIdentity connections, none idle
	SourceConns    Reason = "source_conns"        // the source has StrangersPerSource stranger connections, none idle
	StrangersFull  Reason = "strangers_full"      // the strangers' pool is full, none idle
	PeersFull      Reason = "peers_full"          // the peers' pool is full, none idle
	IdlePressedOut Reason = "idle_under_pressure" // a stranger idle past IdlePressed while the pool is pressed
	Gone           Reason = "gone"                // the connection was already evicted
	HandshakeBad   Reason = "handshake_failed"    // TLS failed: no certificate, wrong ALPN, not TLS at all
)
