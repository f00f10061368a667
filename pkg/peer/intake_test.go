package peer

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// dialFrom connects to n as key from the loopback address ip.
func (n *testNode) dialFrom(t testing.TB, key KeyHolder, ip string) *Conn {
	t.Helper()
	c, err := NewClient(key)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := c.From(netip.MustParseAddr(ip)).Dial(context.Background(), n.addr, n.key.AID())
	if err != nil {
		t.Fatalf("Dial(%s) from %s: %v", n.addr, ip, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// addPeer puts key in n's peers table (known) and, when trusted, its trust list.
func (n *testNode) addPeer(t testing.TB, key KeyHolder, trusted bool) {
	t.Helper()
	ctx := context.Background()
	if err := n.store.AddPeer(ctx, n.key, key.AID(), "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if trusted {
		if err := n.store.AddTrust(ctx, n.key, key.AID()); err != nil {
			t.Fatal(err)
		}
	}
	n.svc.PeersChanged()
}

var seq atomic.Int64

// send signs and sends one task with a fresh id and returns the ack.
func send(t testing.TB, conn *Conn, k KeyHolder, to, text string, now time.Time) Ack {
	t.Helper()
	i := seq.Add(1)
	ack, err := conn.Send(task(t, k, to, fmt.Sprintf("m-%d", i), fmt.Sprintf("ix-%d", i), text, now))
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	return ack
}

// N1: strangers share one node-wide budget and a budget per source; known and trusted peers
// have budgets of their own that strangers cannot spend.
func TestRatesPerClass(t *testing.T) {
	clk := &clock{t: time.Now().UTC()}
	b := newTestNode(t, 2, Options{Now: clk.Now, Rates: Rates{
		Trusted: RateLimit{Burst: 5, PerMinute: 1}, Known: RateLimit{Burst: 3, PerMinute: 1},
		Stranger: RateLimit{Burst: 100, PerMinute: 1}, StrangerSource: RateLimit{Burst: 4, PerMinute: 1}, Strangers: RateLimit{Burst: 6, PerMinute: 1},
	}})
	b.listen(t)
	to := b.key.AID()
	known, trusted := newSeedKey(10), newSeedKey(11)
	b.addPeer(t, known, false)
	b.addPeer(t, trusted, true)

	// Strangers from 127.0.0.2: four keys, one message each, then the source is spent.
	for i := 0; i < 5; i++ {
		k := newSeedKey(byte(20 + i))
		ack := send(t, b.dialFrom(t, k, "127.0.0.2"), k, to, "x", clk.Now())
		if want := i < 4; ack.Delivered() != want {
			t.Fatalf("stranger %d from 127.0.0.2 = %+v, want delivered %v", i, ack, want)
		}
		if i == 4 && (ack.Code != CodeRateLimited || !strings.Contains(ack.Detail, "from all strangers at 127.0.0.2/32")) {
			t.Fatalf("fifth stranger from one source = %+v, want the source limit named", ack)
		}
	}
	// Another source still has room until the strangers' node-wide 6 are spent.
	for i := 0; i < 3; i++ {
		k := newSeedKey(byte(30 + i))
		ack := send(t, b.dialFrom(t, k, "127.0.0.3"), k, to, "x", clk.Now())
		if want := i < 2; ack.Delivered() != want {
			t.Fatalf("stranger %d from 127.0.0.3 = %+v, want delivered %v", i, ack, want)
		}
		if i == 2 && !strings.Contains(ack.Detail, "node-wide") {
			t.Fatalf("stranger past the node-wide budget = %+v, want it named", ack)
		}
	}
	// The strangers' budgets are spent; the operator's peers have theirs, per key.
	kc, tc := b.dialFrom(t, known, "127.0.0.2"), b.dialFrom(t, trusted, "127.0.0.2")
	for i := 0; i < 3; i++ {
		if ack := send(t, kc, known, to, "k", clk.Now()); ack.Status != StatusAccepted {
			t.Fatalf("known peer's task %d = %+v, want accepted", i, ack)
		}
	}
	if ack := send(t, kc, known, to, "k", clk.Now()); ack.Code != CodeRateLimited || !strings.Contains(ack.Detail, "known peer") {
		t.Fatalf("known peer past its own burst = %+v, want its own limit", ack)
	}
	for i := 0; i < 5; i++ {
		if ack := send(t, tc, trusted, to, "t", clk.Now()); ack.Status != StatusAccepted {
			t.Fatalf("trusted peer's task %d = %+v, want accepted", i, ack)
		}
	}
}

// N1: a restart gives nobody a fresh burst: the buckets are rebuilt from the messages the
// store accepted, and refill from the time each arrived.
func TestRatesSurviveRestart(t *testing.T) {
	clk := &clock{t: time.Now().UTC()}
	dir := t.TempDir()
	rates := Rates{Stranger: RateLimit{Burst: 3, PerMinute: 6}}
	k := newSeedKey(40)
	start := func() *testNode {
		st, err := store.Open(filepath.Join(dir, "anet.db"))
		if err != nil {
			t.Fatal(err)
		}
		svc, err := New(Options{Identity: newSeedKey(2), Store: st, Now: clk.Now, Rates: rates, Log: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		n := &testNode{key: newSeedKey(2), store: st, svc: svc}
		n.listen(t)
		t.Cleanup(func() { svc.Close(); st.Close() })
		return n
	}
	b := start()
	conn := b.dial(t, k)
	for i := 0; i < 3; i++ {
		if ack := send(t, conn, k, b.key.AID(), "x", clk.Now()); ack.Status != StatusAccepted {
			t.Fatalf("task %d = %+v", i, ack)
		}
	}
	b.svc.Close()
	b.store.Close()
	b = start()
	conn = b.dial(t, k)
	if ack := send(t, conn, k, b.key.AID(), "x", clk.Now()); ack.Code != CodeRateLimited {
		t.Fatalf("first task after a restart with the burst spent = %+v, want %s", ack, CodeRateLimited)
	}
	// 6 a minute: one token back 10 s after the messages arrived (the store stamps them
	// with the real clock, a little after this test clock started).
	clk.Add(12 * time.Second)
	if ack := send(t, conn, k, b.key.AID(), "x", clk.Now()); ack.Status != StatusAccepted {
		t.Fatalf("task after refill = %+v, want accepted", ack)
	}
	if ack := send(t, conn, k, b.key.AID(), "x", clk.Now()); ack.Code != CodeRateLimited {
		t.Fatalf("second task after one refill = %+v, want rate limited", ack)
	}
}

// N1: a stranger's unanswered tasks stop at its quota, all strangers' at theirs, each with
// its own code; known and trusted peers are not charged; answering gives the room back.
func TestStorageQuotas(t *testing.T) {
	const text = 3000
	charge := int64(text + store.TaskOverhead)
	b := newTestNode(t, 2, Options{Quota: &Quota{PerStranger: 2 * charge, Strangers: 3 * charge}})
	b.listen(t)
	to, now := b.key.AID(), time.Now()
	body := strings.Repeat("q", text)
	s1, s2, known := newSeedKey(50), newSeedKey(51), newSeedKey(52)
	b.addPeer(t, known, false)
	c1, c2, ck := b.dialFrom(t, s1, "127.0.0.2"), b.dialFrom(t, s2, "127.0.0.3"), b.dial(t, known)
	for i := 0; i < 2; i++ {
		if ack := send(t, c1, s1, to, body, now); ack.Status != StatusAccepted {
			t.Fatalf("stranger 1 task %d = %+v", i, ack)
		}
	}
	ack := send(t, c1, s1, to, body, now)
	if ack.Code != CodePeerQuota || !strings.Contains(ack.Detail, fmt.Sprintf("%d of %d bytes", 2*charge, 2*charge)) {
		t.Fatalf("stranger 1 over its quota = %+v, want %s naming its use", ack, CodePeerQuota)
	}
	if ack := send(t, c2, s2, to, body, now); ack.Status != StatusAccepted {
		t.Fatalf("stranger 2's first task = %+v, want accepted", ack)
	}
	if ack := send(t, c2, s2, to, body, now); ack.Code != CodeStrangersQuota || ack.Detail != "" {
		t.Fatalf("stranger 2 with strangers' quota spent = %+v, want %s without others' figures", ack, CodeStrangersQuota)
	}
	for i := 0; i < 5; i++ {
		if ack := send(t, ck, known, to, body, now); ack.Status != StatusAccepted {
			t.Fatalf("known peer's task %d with strangers' quota spent = %+v, want accepted", i, ack)
		}
	}
	if !Transient(CodePeerQuota) || !Transient(CodeStrangersQuota) || !Transient(reasons.DiskLow) {
		t.Fatal("quota and disk refusals must be transient: the sender retries later")
	}
	// The operator answers one of stranger 1's tasks: its room comes back.
	in, err := b.store.Inbox(context.Background(), store.InboxOptions{State: store.StateNew})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range in {
		if it.Peer == s1.AID() {
			if err := b.svc.Reply(context.Background(), it.Peer, it.ID, "done"); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if ack := send(t, c1, s1, to, body, now); ack.Status != StatusAccepted {
		t.Fatalf("stranger 1 after an answer = %+v, want accepted", ack)
	}
}

// N1: below the free-space floor strangers are refused with disk_low, known peers below
// half of it, trusted peers below a quarter.
func TestDiskFloor(t *testing.T) {
	var free atomic.Int64
	clk := &clock{t: time.Now().UTC()}
	b := newTestNode(t, 2, Options{Now: clk.Now, Quota: &Quota{PerStranger: 1 << 30, Strangers: 1 << 30, DiskFreeMin: 1000},
		DiskFree: func() (int64, error) { return free.Load(), nil }})
	b.listen(t)
	to := b.key.AID()
	stranger, known, trusted := newSeedKey(60), newSeedKey(61), newSeedKey(62)
	b.addPeer(t, known, false)
	b.addPeer(t, trusted, true)
	conns := map[string]*Conn{"stranger": b.dial(t, stranger), "known": b.dial(t, known), "trusted": b.dial(t, trusted)}
	keys := map[string]KeyHolder{"stranger": stranger, "known": known, "trusted": trusted}
	for _, tc := range []struct {
		free     int64
		accepted map[string]bool
	}{
		{1000, map[string]bool{"stranger": true, "known": true, "trusted": true}},
		{999, map[string]bool{"stranger": false, "known": true, "trusted": true}},
		{499, map[string]bool{"stranger": false, "known": false, "trusted": true}},
		{249, map[string]bool{"stranger": false, "known": false, "trusted": false}},
	} {
		free.Store(tc.free)
		clk.Add(diskGaugeTTL) // a new reading
		for who, want := range tc.accepted {
			ack := send(t, conns[who], keys[who], to, "d", clk.Now())
			if got := ack.Status == StatusAccepted; got != want || (!want && ack.Code != reasons.DiskLow) {
				t.Fatalf("%d bytes free, %s: %+v, want accepted %v (else %s)", tc.free, who, ack, want, reasons.DiskLow)
			}
		}
	}
}
