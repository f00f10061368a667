package admission

import (
	"sync"
	"time"
)

// ID names one connection in a Table.
type ID uint64

// Eviction is a connection the caller must close, and why.
type Eviction struct {
	ID     ID
	Reason Reason
}

// Verdict is the answer to Arrive or Authenticated: when Admit is false the caller closes
// the new connection (Reason says why); either way it closes every connection in Evict.
type Verdict struct {
	Admit  bool
	Reason Reason
	Evict  []Eviction
}

// conn is one tracked connection.
type conn struct {
	id      ID
	src     Source
	pool    pool
	aid     string
	class   Class
	arrived time.Time
	last    time.Time // last frame finished (authenticated connections)
	heard   bool      // a byte arrived
	busy    bool      // a frame is being read or answered
}

// Table tracks the listener's connections and applies the decisions. It is safe for
// concurrent use. mu guards every field below it.
type Table struct {
	l Limits

	mu        sync.Mutex
	next      ID
	conns     map[ID]*conn
	inPool    [numPools]int
	pending   map[Source]int // handshakes in progress per source
	strangers map[Source]int // authenticated stranger connections per source
	byAID     map[string]int
	perSource *Buckets
	strRate   *Buckets // one key: every source that is not vouched
}

// NewTable returns an empty table; zero fields of l take DefaultLimits.
func NewTable(l Limits) *Table {
	l = l.withDefaults()
	return &Table{
		l: l, conns: map[ID]*conn{}, pending: map[Source]int{}, strangers: map[Source]int{}, byAID: map[string]int{},
		perSource: NewBuckets(l.AcceptPerSource, 0), strRate: NewBuckets(l.AcceptStrangers, 1),
	}
}

// Arrive decides on a new connection from src, before any byte of TLS is read. An admitted
// connection gets an ID and a handshake deadline (shorter while its pool is pressed).
func (t *Table) Arrive(src Source, vouched bool, now time.Time) (ID, time.Duration, Verdict) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := src.String()
	a := arrival{
		Vouched:        vouched,
		SourceRateOK:   t.perSource.Has(key, now),
		StrangerRateOK: vouched || t.strRate.Has("", now),
		SourcePending:  t.pending[src],
		Pending:        t.inPool[poolPending],
		PendingVouched: t.inPool[poolPendingVouched],
	}
	d := decideArrival(a, t.l)
	if a.SourceRateOK && (vouched || a.StrangerRateOK) {
		// Every connection that passed the rates costs a token, admitted or not: the rates
		// bound accepts, and an accept is what was spent.
		t.perSource.Take(key, now)
		if !vouched {
			t.strRate.Take("", now)
		}
	}
	if !d.Admit {
		return 0, 0, Verdict{Reason: d.Reason}
	}
	var v Verdict
	if d.NeedVictim {
		if id, ok := t.victim(func(c *conn) bool { return c.pool == poolPending }, t.pendingLoad); ok {
			v.Evict = append(v.Evict, Eviction{ID: id, Reason: Evicted})
			t.remove(id)
		}
	}
	t.next++
	c := &conn{id: t.next, src: src, pool: d.Pool, arrived: now, last: now}
	t.add(c)
	v.Admit = true
	return c.id, t.handshakeLimit(c.pool), v
}

func (t *Table) handshakeLimit(p pool) time.Duration {
	capacity := t.l.Pending
	if p == poolPendingVouched {
		capacity = t.l.PendingVouched
	}
	return handshakeLimit(t.inPool[p], capacity, t.l)
}

// Heard records that the first byte of a connection arrived: it is no longer half-open.
func (t *Table) Heard(id ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.conns[id]; c != nil {
		c.heard = true
	}
}

// Authenticated decides on a connection whose handshake completed as aid of class. A
// refused connection is forgotten; the caller closes it. Evictions happen only when every
// one that is needed is possible, so a refusal never costs another peer its connection.
func (t *Table) Authenticated(id ID, aid string, class Class, now time.Time) Verdict {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.conns[id]
	if c == nil {
		return Verdict{Reason: Gone}
	}
	t.remove(id) // out of the pending pool; added again below when admitted
	counts := func() established {
		return established{Class: class, IdentityConns: t.byAID[aid], SourceStrangers: t.strangers[c.src],
			Strangers: t.inPool[poolStrangers], Peers: t.inPool[poolPeers]}
	}
	d := decideEstablished(counts(), t.l)
	for _, scope := range d.Victims {
		if _, ok := t.victim(t.evictable(scope, d.Pool, aid, c.src), t.authLoad); !ok {
			return Verdict{Reason: scope.refusal(d.Pool)}
		}
	}
	// One eviction may satisfy several scopes (a key's own idle link is also from its
	// source and in its pool): decide again after each.
	var v Verdict
	for d = decideEstablished(counts(), t.l); len(d.Victims) > 0; d = decideEstablished(counts(), t.l) {
		vid, ok := t.victim(t.evictable(d.Victims[0], d.Pool, aid, c.src), t.authLoad)
		if !ok {
			return Verdict{Reason: d.Victims[0].refusal(d.Pool), Evict: v.Evict}
		}
		v.Evict = append(v.Evict, Eviction{ID: vid, Reason: Evicted})
		t.remove(vid)
	}
	c.pool, c.aid, c.class, c.last = d.Pool, aid, class, now
	t.add(c)
	v.Admit = true
	return v
}

// evictable matches the idle authenticated connections a scope may evict.
func (t *Table) evictable(s victimScope, p pool, aid string, src Source) func(*conn) bool {
	return func(o *conn) bool {
		if o.pool < poolStrangers || o.busy {
			return false
		}
		switch s {
		case sameIdentity:
			return o.aid == aid
		case sameSource:
			return o.pool == poolStrangers && o.src == src
		}
		return o.pool == p
	}
}

// Busy marks a connection as reading or answering a frame (busy) or idle between frames.
// Only idle connections are evicted.
func (t *Table) Busy(id ID, busy bool, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.conns[id]; c != nil {
		c.busy, c.last = busy, now
	}
}

// Leave forgets a connection that ended; it is a no-op for one already evicted.
func (t *Table) Leave(id ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.remove(id)
}

// Sweep returns the connections to close now: handshakes past their pool's current limit
// (which tightens under pressure) and, while the strangers' pool is more than three quarters
// full, strangers idle longer than IdlePressed. They are forgotten at once.
func (t *Table) Sweep(now time.Time) []Eviction {
	t.mu.Lock()
	defer t.mu.Unlock()
	limits := [numPools]time.Duration{
		poolPending:        t.handshakeLimit(poolPending),
		poolPendingVouched: t.handshakeLimit(poolPendingVouched),
	}
	strangersPressed := pressed(t.inPool[poolStrangers], t.l.Strangers, 3, 4)
	var out []Eviction
	for id, c := range t.conns {
		switch {
		case c.pool <= poolPendingVouched && now.Sub(c.arrived) > limits[c.pool]:
			out = append(out, Eviction{ID: id, Reason: HandshakeSlow})
		case c.pool == poolStrangers && strangersPressed && !c.busy && now.Sub(c.last) > t.l.IdlePressed:
			out = append(out, Eviction{ID: id, Reason: IdlePressedOut})
		}
	}
	for _, e := range out {
		t.remove(e.ID)
	}
	return out
}

// Counts is a snapshot of the pools, for logs and tests.
type Counts struct {
	Pending, PendingVouched, Strangers, Peers int
}

// Counts returns the current pool sizes.
func (t *Table) Counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Counts{t.inPool[poolPending], t.inPool[poolPendingVouched], t.inPool[poolStrangers], t.inPool[poolPeers]}
}

func (t *Table) pendingLoad(c *conn) int { return t.pending[c.src] }

func (t *Table) authLoad(c *conn) int {
	if c.class == Stranger {
		return t.strangers[c.src]
	}
	return t.byAID[c.aid]
}

// victim picks among the connections that match, by pickVictim's order.
func (t *Table) victim(match func(*conn) bool, load func(*conn) int) (ID, bool) {
	var ids []ID
	var cs []candidate
	for id, c := range t.conns {
		if !match(c) {
			continue
		}
		since := c.last
		if c.pool <= poolPendingVouched {
			since = c.arrived
		}
		ids = append(ids, id)
		cs = append(cs, candidate{Silent: !c.heard, SourceLoad: load(c), Class: c.class, Since: since})
	}
	i, ok := pickVictim(cs)
	if !ok {
		return 0, false
	}
	return ids[i], true
}

func (t *Table) add(c *conn) {
	t.conns[c.id] = c
	t.inPool[c.pool]++
	switch c.pool {
	case poolPending, poolPendingVouched:
		t.pending[c.src]++
	default:
		t.byAID[c.aid]++
		if c.pool == poolStrangers {
			t.strangers[c.src]++
		}
	}
}

func (t *Table) remove(id ID) {
	c := t.conns[id]
	if c == nil {
		return
	}
	delete(t.conns, id)
	t.inPool[c.pool]--
	dec := func(m map[Source]int, k Source) {
		if m[k]--; m[k] <= 0 {
			delete(m, k)
		}
	}
	switch c.pool {
	case poolPending, poolPendingVouched:
		dec(t.pending, c.src)
	default:
		if t.byAID[c.aid]--; t.byAID[c.aid] <= 0 {
			delete(t.byAID, c.aid)
		}
		if c.pool == poolStrangers {
			dec(t.strangers, c.src)
		}
	}
}
