package admission

import "time"

// The decisions below are pure: counts in, a verdict out. Table gathers the counts and
// carries the verdicts out.

// pool is where a connection is counted.
type pool uint8

const (
	poolPending        pool = iota // handshaking, source not vouched
	poolPendingVouched             // handshaking, source vouched
	poolStrangers                  // authenticated strangers
	poolPeers                      // authenticated known and trusted peers
	numPools
)

// arrival is what the accept decision looks at.
type arrival struct {
	Vouched        bool
	SourceRateOK   bool // the source's accept bucket has a token
	StrangerRateOK bool // the strangers' accept bucket has a token (ignored when vouched)
	SourcePending  int  // handshakes in progress from this source
	Pending        int  // in poolPending
	PendingVouched int  // in poolPendingVouched
}

// arrivalVerdict: admit into Pool, after evicting one pending connection when NeedVictim.
type arrivalVerdict struct {
	Admit      bool
	Reason     Reason
	Pool       pool
	NeedVictim bool
}

// decideArrival is the layer before TLS: rate per source, rate of unvouched sources
// together, handshakes per source, then a pool slot (the vouched pool first for vouched
// sources; the shared pool evicts its least promising connection when full, so a new
// arrival is never refused for the pool alone).
func decideArrival(a arrival, l Limits) arrivalVerdict {
	switch {
	case !a.SourceRateOK:
		return arrivalVerdict{Reason: SourceRate}
	case !a.Vouched && !a.StrangerRateOK:
		return arrivalVerdict{Reason: StrangersRate}
	case a.SourcePending >= l.PendingPerSource:
		return arrivalVerdict{Reason: SourcePending}
	case a.Vouched && a.PendingVouched < l.PendingVouched:
		return arrivalVerdict{Admit: true, Pool: poolPendingVouched}
	case a.Pending < l.Pending:
		return arrivalVerdict{Admit: true, Pool: poolPending}
	}
	return arrivalVerdict{Admit: true, Pool: poolPending, NeedVictim: true}
}

// established is what the post-handshake decision looks at.
type established struct {
	Class           Class
	IdentityConns   int // authenticated connections of this key
	SourceStrangers int // authenticated stranger connections from this source
	Strangers       int // in poolStrangers
	Peers           int // in poolPeers
}

// victimScope says which connections may be evicted to make room.
type victimScope uint8

const (
	sameIdentity victimScope = iota
	sameSource
	samePool
)

// establishedVerdict: admit into Pool after evicting one idle connection for each scope in
// Victims; if a scope has no idle connection, the arrival is refused with that scope's reason.
type establishedVerdict struct {
	Pool    pool
	Victims []victimScope
}

// decideEstablished is the layer after TLS. A key at its cap replaces its own idle
// connection (a peer that reconnects is never locked out by its own stale link); a
// stranger at the per-source cap replaces one from its source; a full pool replaces its
// least recently active idle connection. Known and trusted peers never compete with
// strangers: their pool is separate.
func decideEstablished(e established, l Limits) establishedVerdict {
	v := establishedVerdict{Pool: poolPeers}
	if e.IdentityConns >= l.PerIdentity {
		v.Victims = append(v.Victims, sameIdentity)
	}
	if e.Class == Stranger {
		v.Pool = poolStrangers
		if e.SourceStrangers >= l.StrangersPerSource {
			v.Victims = append(v.Victims, sameSource)
		}
		if e.Strangers >= l.Strangers {
			v.Victims = append(v.Victims, samePool)
		}
		return v
	}
	if e.Peers >= l.Peers {
		v.Victims = append(v.Victims, samePool)
	}
	return v
}

// refusal is the reason for a scope that found no idle connection to evict.
func (s victimScope) refusal(p pool) Reason {
	switch s {
	case sameIdentity:
		return IdentityConns
	case sameSource:
		return SourceConns
	}
	if p == poolPeers {
		return PeersFull
	}
	return StrangersFull
}

// candidate is a connection that may be evicted.
type candidate struct {
	Silent     bool      // nothing received yet (a half-open connection)
	SourceLoad int       // connections its source holds in the same pool
	Class      Class     // strangers go before known, known before trusted
	Since      time.Time // arrival (pending) or last activity (authenticated)
}

// pickVictim returns the index of the connection to evict first: silent before heard, lower
// class before higher, the heaviest source before lighter ones, then the oldest. An honest
// client speaks at once and finishes quickly, so under a flood it is rarely the one chosen.
func pickVictim(cs []candidate) (int, bool) {
	best := -1
	for i, c := range cs {
		if best < 0 || worse(c, cs[best]) {
			best = i
		}
	}
	return best, best >= 0
}

// worse reports whether a should be evicted before b.
func worse(a, b candidate) bool {
	if a.Silent != b.Silent {
		return a.Silent
	}
	if a.Class != b.Class {
		return a.Class < b.Class
	}
	if a.SourceLoad != b.SourceLoad {
		return a.SourceLoad > b.SourceLoad
	}
	return a.Since.Before(b.Since)
}

// pressed reports whether a pool is over the fraction num/den of its capacity.
func pressed(n, capacity, num, den int) bool { return n*den > capacity*num }

// handshakeLimit is the time a new connection in pool p has to finish TLS.
func handshakeLimit(n, capacity int, l Limits) time.Duration {
	if pressed(n, capacity, 1, 2) {
		return l.HandshakePressed
	}
	return l.Handshake
}
