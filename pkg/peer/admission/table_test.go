package admission

import (
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

func src(s string) Source { return SourceOfIP(netip.MustParseAddr(s)) }

// open admits a connection or fails the test.
func open(t *testing.T, tb *Table, s Source, vouched bool, now time.Time) (ID, Verdict) {
	t.Helper()
	id, _, v := tb.Arrive(s, vouched, now)
	if !v.Admit {
		t.Fatalf("Arrive(%s) refused: %s", s, v.Reason)
	}
	return id, v
}

func noRates(l Limits) Limits {
	l.AcceptPerSource = Rate{Burst: 1 << 20, PerMinute: 1 << 20}
	l.AcceptStrangers = Rate{Burst: 1 << 20, PerMinute: 1 << 20}
	return l
}

// N1: half-open connections from one address take only that address's share; another
// address, and a vouched one, still get in.
func TestTableHalfOpenFromOneSource(t *testing.T) {
	tb := NewTable(noRates(testLimits))
	now := time.Unix(1000, 0)
	attacker := src("192.0.2.66")
	refused := 0
	for i := 0; i < 2000; i++ {
		if _, _, v := tb.Arrive(attacker, false, now); !v.Admit {
			if v.Reason != SourcePending {
				t.Fatalf("refusal %d: %s, want %s", i, v.Reason, SourcePending)
			}
			refused++
		}
	}
	if refused != 2000-testLimits.PendingPerSource {
		t.Fatalf("refused %d of 2000, want all but %d", refused, testLimits.PendingPerSource)
	}
	open(t, tb, src("198.51.100.1"), false, now)
	open(t, tb, src("127.0.0.1"), true, now)
}

// N1: half-open connections from many addresses fill the shared handshake pool; each new
// one evicts a silent one, a connection that is speaking TLS outlives them, and the vouched
// pool is never touched.
func TestTableHalfOpenFromManySources(t *testing.T) {
	tb := NewTable(noRates(testLimits))
	now := time.Unix(1000, 0)
	peerID, _ := open(t, tb, src("127.0.0.1"), true, now)
	honest, _ := open(t, tb, src("198.51.100.9"), false, now)
	tb.Heard(honest) // its ClientHello arrived
	evicted := map[ID]bool{}
	for i := 0; i < 2000; i++ {
		now = now.Add(time.Millisecond)
		_, v := open(t, tb, src(fmt.Sprintf("10.%d.%d.1", i/250, i%250)), false, now)
		for _, e := range v.Evict {
			if e.Reason != Evicted {
				t.Fatalf("eviction reason %s", e.Reason)
			}
			evicted[e.ID] = true
		}
	}
	if evicted[peerID] {
		t.Fatal("the vouched peer's handshake was evicted by strangers")
	}
	if evicted[honest] {
		t.Fatal("a connection that had spoken was evicted while silent ones remained")
	}
	if c := tb.Counts(); c.Pending != testLimits.Pending || c.PendingVouched != 1 {
		t.Fatalf("counts = %+v, want the shared pool full and the one vouched handshake", c)
	}
	if v := tb.Authenticated(peerID, "anpeer", Trusted, now); !v.Admit {
		t.Fatalf("the vouched peer's handshake completed but was refused: %s", v.Reason)
	}
}

// N1: a pool over half full gives handshakes the short deadline, and Sweep ends those past it.
func TestTableHandshakeDeadlineTightens(t *testing.T) {
	tb := NewTable(noRates(testLimits))
	now := time.Unix(1000, 0)
	_, d, _ := tb.Arrive(src("10.0.0.1"), false, now)
	if d != testLimits.Handshake {
		t.Fatalf("first handshake limit = %s, want %s", d, testLimits.Handshake)
	}
	for i := 2; i <= 6; i++ {
		_, d, _ = tb.Arrive(src(fmt.Sprintf("10.0.0.%d", i)), false, now)
	}
	if d != testLimits.HandshakePressed {
		t.Fatalf("handshake limit with 6 of 10 = %s, want %s", d, testLimits.HandshakePressed)
	}
	if ev := tb.Sweep(now.Add(time.Second)); len(ev) != 0 {
		t.Fatalf("Sweep after 1 s = %v, want nothing", ev)
	}
	ev := tb.Sweep(now.Add(3 * time.Second))
	if len(ev) != 6 || ev[0].Reason != HandshakeSlow {
		t.Fatalf("Sweep after 3 s under pressure = %v, want all 6 handshakes ended", ev)
	}
	if c := tb.Counts(); c.Pending != 0 {
		t.Fatalf("pending after sweep = %d", c.Pending)
	}
	// Without pressure the long deadline holds.
	tb.Arrive(src("10.0.0.1"), false, now)
	if ev := tb.Sweep(now.Add(9 * time.Second)); len(ev) != 0 {
		t.Fatalf("Sweep of a lone handshake after 9 s = %v, want nothing", ev)
	}
}

// authed opens and authenticates a connection.
func authed(t *testing.T, tb *Table, s Source, aid string, c Class, now time.Time) (ID, Verdict) {
	t.Helper()
	id, _ := open(t, tb, s, c != Stranger, now)
	v := tb.Authenticated(id, aid, c, now)
	return id, v
}

// N1: idle strangers with fresh keys fill their pool; known and trusted peers have their
// own; a new stranger replaces the idle one from the heaviest source.
func TestTableStrangersCannotTakePeersRoom(t *testing.T) {
	tb := NewTable(noRates(testLimits))
	now := time.Unix(1000, 0)
	heavy := src("10.9.9.9")
	var heavyIDs []ID
	for i := 0; i < 6; i++ {
		s := heavy
		if i >= 2 {
			s = src(fmt.Sprintf("10.0.0.%d", i))
		}
		id, v := authed(t, tb, s, "stranger"+strconv.Itoa(i), Stranger, now.Add(time.Duration(i)*time.Second))
		if !v.Admit {
			t.Fatalf("stranger %d refused: %s", i, v.Reason)
		}
		if s == heavy {
			heavyIDs = append(heavyIDs, id)
		}
	}
	for i, c := range []Class{Known, Trusted, Known, Trusted} {
		if _, v := authed(t, tb, src("127.0.0.1"), "peer"+strconv.Itoa(i), c, now); !v.Admit || len(v.Evict) != 0 {
			t.Fatalf("%s peer %d with strangers' pool full = %+v, want admitted, nothing evicted", c, i, v)
		}
	}
	_, v := authed(t, tb, src("10.1.1.1"), "newstranger", Stranger, now.Add(time.Minute))
	if !v.Admit || len(v.Evict) != 1 || v.Evict[0].ID != heavyIDs[0] {
		t.Fatalf("new stranger = %+v, want admitted by evicting the heavy source's oldest idle link %d", v, heavyIDs[0])
	}
	// Every stranger busy: the next one is refused, and nothing is evicted for it.
	for id, c := range tb.conns {
		if c.pool == poolStrangers {
			tb.Busy(id, true, now)
		}
	}
	if _, v := authed(t, tb, src("10.1.1.2"), "another", Stranger, now.Add(time.Minute)); v.Admit || v.Reason != StrangersFull || len(v.Evict) != 0 {
		t.Fatalf("stranger with every stranger busy = %+v, want refused %s with no eviction", v, StrangersFull)
	}
	// The peers' pool is full too; a fifth peer replaces an idle known link, never a trusted one first.
	_, v = authed(t, tb, src("127.0.0.1"), "peer5", Trusted, now.Add(time.Minute))
	if !v.Admit || len(v.Evict) != 1 || tb.conns[v.Evict[0].ID] != nil {
		t.Fatalf("fifth peer = %+v, want one eviction", v)
	}
	classes := map[Class]int{}
	for _, c := range tb.conns {
		if c.pool == poolPeers {
			classes[c.class]++
		}
	}
	if classes[Known] != 1 || classes[Trusted] != 3 {
		t.Fatalf("peers' pool = %v, want a known link evicted before any trusted one", classes)
	}
}

// N1: per key and per source caps; a key that reconnects replaces its own idle link.
func TestTableIdentityAndSourceCaps(t *testing.T) {
	tb := NewTable(noRates(testLimits))
	now := time.Unix(1000, 0)
	first, _ := authed(t, tb, src("10.0.0.1"), "k", Known, now)
	authed(t, tb, src("10.0.0.2"), "k", Known, now.Add(time.Second))
	_, v := authed(t, tb, src("10.0.0.3"), "k", Known, now.Add(2*time.Second))
	if !v.Admit || len(v.Evict) != 1 || v.Evict[0].ID != first {
		t.Fatalf("third link of a key = %+v, want admitted replacing its oldest idle link", v)
	}
	for id, c := range tb.conns {
		if c.aid == "k" {
			tb.Busy(id, true, now)
		}
	}
	if _, v := authed(t, tb, src("10.0.0.4"), "k", Known, now); v.Admit || v.Reason != IdentityConns {
		t.Fatalf("link of a key with every link busy = %+v, want %s", v, IdentityConns)
	}
	s := src("10.7.7.7")
	a, _ := authed(t, tb, s, "s1", Stranger, now)
	authed(t, tb, s, "s2", Stranger, now)
	tb.Busy(a, true, now)
	_, v = authed(t, tb, s, "s3", Stranger, now)
	if !v.Admit || len(v.Evict) != 1 || tb.conns[a] == nil {
		t.Fatalf("third stranger from one source = %+v, want the idle one replaced, the busy one kept", v)
	}
}

// Sweep ends idle strangers early only while their pool is pressed, never a busy one, and
// never a known or trusted peer.
func TestTableIdleStrangersUnderPressure(t *testing.T) {
	tb := NewTable(noRates(testLimits))
	now := time.Unix(1000, 0)
	var busy ID
	for i := 0; i < 5; i++ {
		id, _ := authed(t, tb, src(fmt.Sprintf("10.0.0.%d", i)), "s"+strconv.Itoa(i), Stranger, now)
		if i == 0 {
			busy = id
			tb.Busy(id, true, now)
		}
	}
	peer, _ := authed(t, tb, src("127.0.0.1"), "p", Known, now)
	ev := tb.Sweep(now.Add(time.Minute))
	if len(ev) != 4 {
		t.Fatalf("Sweep with 5 of 6 strangers = %v, want the 4 idle ones", ev)
	}
	for _, e := range ev {
		if e.ID == busy || e.ID == peer || e.Reason != IdlePressedOut {
			t.Fatalf("Sweep evicted %+v", e)
		}
	}
	if ev := tb.Sweep(now.Add(time.Hour)); len(ev) != 0 {
		t.Fatalf("Sweep with one stranger left = %v, want nothing (no pressure)", ev)
	}
}

// N1: accept rates per source and for unvouched sources together; vouched sources skip
// the latter.
func TestTableAcceptRates(t *testing.T) {
	l := testLimits
	l.PendingPerSource = 1000
	l.Pending = 1000
	tb := NewTable(l)
	now := time.Unix(1000, 0)
	s := src("10.0.0.1")
	for i := 0; i < 5; i++ {
		open(t, tb, s, false, now)
	}
	if _, _, v := tb.Arrive(s, false, now); v.Admit || v.Reason != SourceRate {
		t.Fatalf("sixth connection in a burst of 5 = %+v, want %s", v, SourceRate)
	}
	now = now.Add(time.Second) // 60 a minute: one more for the source; the strangers' 20 are full again
	open(t, tb, s, false, now)
	for i := 0; i < 19; i++ {
		open(t, tb, src(fmt.Sprintf("10.1.0.%d", i)), false, now)
	}
	if _, _, v := tb.Arrive(src("10.2.0.1"), false, now); v.Admit || v.Reason != StrangersRate {
		t.Fatalf("21st stranger connection = %+v, want %s", v, StrangersRate)
	}
	open(t, tb, src("127.0.0.1"), true, now)
}

// A connection evicted during its handshake cannot come back as authenticated.
func TestTableEvictedIsGone(t *testing.T) {
	tb := NewTable(noRates(testLimits))
	now := time.Unix(1000, 0)
	id, _ := open(t, tb, src("10.0.0.1"), false, now)
	tb.Sweep(now.Add(time.Hour))
	if v := tb.Authenticated(id, "k", Trusted, now); v.Admit || v.Reason != Gone {
		t.Fatalf("Authenticated after eviction = %+v, want %s", v, Gone)
	}
	tb.Leave(id) // harmless
	if c := tb.Counts(); c != (Counts{}) {
		t.Fatalf("counts = %+v, want empty", c)
	}
}

// Buckets stay bounded: full buckets (no state) are dropped, drained ones kept, and new keys
// beyond the bound share one bucket instead of getting fresh ones.
func TestBucketsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	b := NewBuckets(Rate{Burst: 1, PerMinute: 60}, 100)
	for i := 0; i < 100; i++ {
		b.Allow(strconv.Itoa(i), now)
	}
	now = now.Add(time.Minute) // every bucket refilled
	if !b.Allow("0", now) || !b.Allow("new", now) {
		t.Fatal("Allow after a refill = false")
	}
	if b.Len() != 2 {
		t.Fatalf("buckets after pruning = %d, want 2 (the drained one and the new one)", b.Len())
	}
	if b.Allow("0", now) {
		t.Fatal("Allow(0) again = true: pruning must keep a drained bucket")
	}
	for i := 0; i < 200; i++ {
		b.Allow("flood"+strconv.Itoa(i), now)
	}
	if b.Len() > 101 {
		t.Fatalf("buckets after a flood of new keys = %d, want at most 101", b.Len())
	}
	if b.Allow("yet-another", now) {
		t.Fatal("a new key beyond the bound got a fresh bucket")
	}
	if got := (Rate{Burst: 20, PerMinute: 30}).RefillTime(); got != 40*time.Second {
		t.Fatalf("RefillTime = %s, want 40s", got)
	}
}
