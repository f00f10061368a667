package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/peer/admission"
	"anet.dev/anet/pkg/reasons"
)

// rawFrom opens a TCP connection to addr from the loopback address ip and sends nothing.
func rawFrom(t testing.TB, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedSoon reports whether the server ends c within d (a read returns EOF or a reset).
func closedSoon(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// N1: strangers holding every stranger slot with frames in progress cannot keep a known or a
// trusted peer out; the next stranger is turned away, and the turn-away is counted.
func TestListenerKeepsRoomForPeers(t *testing.T) {
	logs := &syncBuffer{}
	b := newTestNode(t, 2, Options{Log: slog.New(slog.NewTextHandler(logs, nil)),
		Limits: admission.Limits{Strangers: 3, StrangersPerSource: 1}})
	b.listen(t)
	known, trusted := newSeedKey(70), newSeedKey(71)
	b.addPeer(t, known, false)
	b.addPeer(t, trusted, true)
	for i := 0; i < 3; i++ {
		k := newSeedKey(byte(80 + i))
		c := b.dialFrom(t, k, fmt.Sprintf("127.0.0.%d", 2+i))
		// A frame header and no body: the server reads the body, so the link is busy and
		// cannot be evicted.
		if _, err := c.tc.Write([]byte{0, 0, 0, 100, 1}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, "three busy strangers", func() bool { return b.svc.server.table.Counts().Strangers == 3 })
	late := newSeedKey(90)
	lc := b.dialFrom(t, late, "127.0.0.9")
	if ack, err := lc.Send(task(t, late, b.key.AID(), "m-late", "ix-late", "x", time.Now())); err == nil {
		t.Fatalf("a fourth stranger was served (%+v) with the strangers' pool full of busy links", ack)
	}
	for name, k := range map[string]seedKey{"known": known, "trusted": trusted} {
		c := b.dialFrom(t, k, "127.0.0.9")
		if ack := send(t, c, k, b.key.AID(), name, time.Now()); ack.Status != StatusAccepted {
			t.Fatalf("%s peer with the strangers' pool full = %+v, want accepted", name, ack)
		}
	}
	b.svc.Close() // flushes the summary
	if !strings.Contains(logs.String(), "strangers_full=1") {
		t.Fatalf("summary does not count the stranger turned away:\n%s", logs.String())
	}
}

// N1: an idle stranger makes room for a new one; a known peer's idle link is never taken
// for a stranger.
func TestListenerEvictsIdleStrangers(t *testing.T) {
	b := newTestNode(t, 2, Options{Limits: admission.Limits{Strangers: 2, Peers: 1}})
	b.listen(t)
	known := newSeedKey(72)
	b.addPeer(t, known, false)
	kc := b.dial(t, known)
	send(t, kc, known, b.key.AID(), "k", time.Now())
	s1, s2, s3 := newSeedKey(91), newSeedKey(92), newSeedKey(93)
	c1 := b.dialFrom(t, s1, "127.0.0.2")
	send(t, c1, s1, b.key.AID(), "1", time.Now())
	c2 := b.dialFrom(t, s2, "127.0.0.3")
	send(t, c2, s2, b.key.AID(), "2", time.Now())
	c3 := b.dialFrom(t, s3, "127.0.0.4")
	if ack := send(t, c3, s3, b.key.AID(), "3", time.Now()); ack.Status != StatusAccepted {
		t.Fatalf("third stranger = %+v, want accepted in an idle stranger's place", ack)
	}
	if _, err := c1.Send(task(t, s1, b.key.AID(), "m-again", "ix-again", "x", time.Now())); err == nil {
		t.Fatal("the oldest idle stranger's link is still served")
	}
	if ack := send(t, kc, known, b.key.AID(), "k2", time.Now()); ack.Status != StatusAccepted {
		t.Fatalf("known peer's idle link after the stranger churn = %+v, want still served", ack)
	}
}

// N1: silent connections from one address take only that address's handshake slots;
// silent connections from many addresses are cut short once the pool is pressed; a trusted
// peer from its vouched address and a stranger from a quiet one are served throughout.
func TestListenerHalfOpenFlood(t *testing.T) {
	logs := &syncBuffer{}
	b := newTestNode(t, 2, Options{Log: slog.New(slog.NewTextHandler(logs, nil)),
		Limits: admission.Limits{Pending: 40, HandshakePressed: 500 * time.Millisecond}})
	b.listen(t)
	trusted := newSeedKey(73)
	b.addPeer(t, trusted, true) // its peers-table address 127.0.0.1 is vouched
	// Of 30 from one address, all but PendingPerSource are reset at once (some so fast
	// that connect itself reports the reset).
	reset := 0
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.66")}}
	for i := 0; i < 30; i++ {
		c, err := d.Dial("tcp", b.addr)
		if err != nil {
			reset++
			continue
		}
		t.Cleanup(func() { c.Close() })
		if closedSoon(c, 100*time.Millisecond) {
			reset++
		}
	}
	for i := 0; i < 60; i++ {
		rawFrom(t, fmt.Sprintf("127.0.1.%d", i+1), b.addr)
	}
	if want := 30 - admission.DefaultLimits.PendingPerSource; reset < want {
		t.Fatalf("%d of 30 silent connections from one address ended at once, want at least %d", reset, want)
	}
	tc := b.dial(t, trusted)
	if ack := send(t, tc, trusted, b.key.AID(), "t", time.Now()); ack.Status != StatusAccepted {
		t.Fatalf("trusted peer during the flood = %+v", ack)
	}
	s := newSeedKey(94)
	if ack := send(t, b.dialFrom(t, s, "127.0.2.1"), s, b.key.AID(), "s", time.Now()); ack.Status != StatusAccepted {
		t.Fatalf("stranger from a quiet address during the flood = %+v", ack)
	}
	// The pressed deadline (0.5 s, not 10 s) ends the silent ones that got a slot.
	testkit.WaitFor(t, "silent handshakes ended under pressure", func() bool {
		c := b.svc.server.table.Counts()
		return c.Pending == 0 && c.PendingVouched == 0
	})
	b.svc.Close()
	for _, want := range []string{"source_handshakes=", "handshake_timeout=", `top_sources="127.0.0.66/32=`} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("summary lacks %q:\n%s", want, logs.String())
		}
	}
}

// N1: a flood of bad handshakes writes a bounded number of log lines and one summary.
func TestListenerLogIsBounded(t *testing.T) {
	logs := &syncBuffer{}
	b := newTestNode(t, 2, Options{Log: slog.New(slog.NewTextHandler(logs, nil)),
		Limits: admission.Limits{AcceptPerSource: admission.Rate{Burst: 1000, PerMinute: 1000}}})
	b.listen(t)
	for i := 0; i < 200; i++ {
		c := rawFrom(t, "127.0.0.7", b.addr)
		c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
		io.Copy(io.Discard, c)
		c.Close()
	}
	b.svc.Close()
	lines := strings.Count(logs.String(), "peer handshake failed")
	if lines == 0 || lines > detailLines {
		t.Fatalf("%d individual handshake lines for 200 bad clients, want 1 to %d", lines, detailLines)
	}
	if !strings.Contains(logs.String(), "handshake_failed=200") {
		t.Fatalf("summary does not count all 200:\n%s", logs.String())
	}
}

// N1: a stranger's key is free, so an authenticated stranger that sends an oversized frame
// header and goes must not buy a log line per connection either: the refusals are counted in
// the summary and only a bounded number are detailed.
func TestOversizedFramesLogIsBounded(t *testing.T) {
	logs := &syncBuffer{}
	b := newTestNode(t, 2, Options{Log: slog.New(slog.NewTextHandler(logs, nil)),
		Limits: admission.Limits{AcceptPerSource: admission.Rate{Burst: 1000, PerMinute: 1000}}})
	b.listen(t)
	const n = 3 * detailLines
	for i := 0; i < n; i++ {
		conn := b.dial(t, newSeedKey(byte(10+i)))
		if ack, err := conn.SendHeader(MaxFrame + 1); err != nil || ack.Code != reasons.MessageTooLarge {
			t.Fatalf("oversized header %d: ack %+v, err %v; want message_too_large", i, ack, err)
		}
		conn.Close()
	}
	b.svc.Close()
	lines := strings.Count(logs.String(), "peer message refused")
	if lines == 0 || lines > detailLines {
		t.Fatalf("%d individual refusal lines for %d oversized frames, want 1 to %d", lines, n, detailLines)
	}
	if !strings.Contains(logs.String(), "message_too_large="+strconv.Itoa(n)) {
		t.Fatalf("summary does not count all %d:\n%s", n, logs.String())
	}
}

// The accept loop outlives running out of descriptors.
func TestRetryableAccept(t *testing.T) {
	for _, err := range []error{
		&net.OpError{Op: "accept", Err: fmt.Errorf("accept4: %w", syscall.EMFILE)},
		context.DeadlineExceeded,
	} {
		if !retryableAccept(err) {
			t.Errorf("retryableAccept(%v) = false", err)
		}
	}
	if retryableAccept(net.ErrClosed) {
		t.Error("retryableAccept(net.ErrClosed) = true")
	}
}
