package peer

import (
	"context"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/canonical"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// Every attack a connected peer can make with messages is refused with its code, and none
// of them reaches the inbox; an honest task does, once.
func TestIntakeRefusals(t *testing.T) {
	clk := &clock{t: time.Now().UTC()}
	b := newTestNode(t, 2, Options{Now: clk.Now, Rates: Rates{Stranger: RateLimit{Burst: 1000, PerMinute: 1}}})
	b.listen(t)
	a, c := newSeedKey(1), newSeedKey(3)
	connA, connC := b.dial(t, a), b.dial(t, c)

	honest := task(t, a, b.key.AID(), "m-honest", "ix-1", "please summarise", clk.Now())
	if ack, err := connA.Send(honest); err != nil || ack.Status != StatusAccepted {
		t.Fatalf("Send(honest task) = %+v, %v, want accepted", ack, err)
	}

	tampered := honest.Raw()
	i := strings.Index(string(tampered), "summarise")
	tampered[i] = 'S'
	tamperedNew := task(t, a, b.key.AID(), "m-tamper", "ix-2", "pay 1 coin", clk.Now()).Raw()
	j := strings.Index(string(tamperedNew), "1 coin")
	tamperedNew[j] = '9'
	old := task(t, a, b.key.AID(), "m-old", "ix-3", "old", clk.Now().Add(-11*time.Minute))
	future := task(t, a, b.key.AID(), "m-future", "ix-4", "future", clk.Now().Add(3*time.Minute))
	toOther := task(t, a, newSeedKey(9).AID(), "m-other", "ix-5", "for someone else", clk.Now())
	claimA := task(t, a, b.key.AID(), "m-claim", "ix-6", "signed by A, sent by C", clk.Now())
	reuseIx := task(t, a, b.key.AID(), "m-reuse", "ix-1", "same interaction again", clk.Now())
	reuseID := task(t, a, b.key.AID(), "m-honest", "ix-7", "same id, other content", clk.Now())
	bigText := strings.Repeat("x", MaxText+1)
	bigEnc := canonical.Encode(msgTag, "task", "m-big", a.AID(), b.key.AID(), formatTime(clk.Now()), "ix-8", bigText, "", "", "")
	big := append(bigEnc, a.Sign(bigEnc)...)
	reply := signed(t, a, Message{Type: TypeReply, ID: "m-reply", From: a.AID(), To: b.key.AID(), Sent: clk.Now(), Interaction: "ix-never-sent", Text: "answer"})

	for _, tc := range []struct {
		name   string
		conn   *Conn
		raw    []byte
		status Status
		code   reasons.Code
		detail string
	}{
		{"replayed identical", connA, honest.Raw(), StatusDuplicate, CodeDuplicate, ""},
		{"tampered copy of an accepted task", connA, tampered, StatusRefused, CodeBadSignature, ""},
		{"tampered new task", connA, tamperedNew, StatusRefused, CodeBadSignature, ""},
		{"impostor C relays A's signed task", connC, claimA.Raw(), StatusRefused, CodeSenderMismatch, "connected as " + c.AID()},
		{"impostor C replays A's accepted task", connC, honest.Raw(), StatusRefused, CodeSenderMismatch, ""},
		{"sent 11 minutes ago", connA, old.Raw(), StatusRefused, CodeReplayWindow, ""},
		{"sent 3 minutes ahead", connA, future.Raw(), StatusRefused, CodeReplayWindow, ""},
		{"addressed to another node", connA, toOther.Raw(), StatusRefused, CodeWrongRecipient, ""},
		{"interaction reused", connA, reuseIx.Raw(), StatusRefused, CodeInteractionReused, "ix-1"},
		{"message id reused", connA, reuseID.Raw(), StatusRefused, CodeIDReused, ""},
		{"text over 256 KiB", connA, big, StatusRefused, reasons.MessageTooLarge, "text: 262145 bytes, more than the limit of 262144"},
		{"reply to a task never sent", connA, reply.Raw(), StatusRefused, CodeUnknownInteraction, ""},
		{"garbage", connA, []byte("hello, is this HTTP?"), StatusRefused, CodeMalformed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ack, err := tc.conn.SendRaw(tc.raw)
			if err != nil {
				t.Fatalf("SendRaw() error = %v", err)
			}
			if ack.Status != tc.status || ack.Code != tc.code || !strings.Contains(ack.Detail, tc.detail) {
				t.Fatalf("ack = %+v, want %s %s with detail containing %q", ack, tc.status, tc.code, tc.detail)
			}
		})
	}
	in := b.inbox(t)
	if len(in) != 1 || in[0].ID != "ix-1" || in[0].Text != "please summarise" || in[0].Peer != a.AID() || in[0].State != store.StateNew {
		t.Fatalf("inbox = %+v, want only the honest task, new", in)
	}
	n, err := b.store.Count(context.Background(), store.CountFilter{Kinds: []string{"task_received"}})
	if err != nil || n != 1 {
		t.Fatalf("task_received entries = %d, %v, want 1", n, err)
	}
	if _, err := b.store.Verify(context.Background(), b.key.Public()); err != nil {
		t.Fatalf("Verify() = %v", err)
	}
}

func signed(t *testing.T, k KeyHolder, m Message) SignedMessage {
	t.Helper()
	sm, err := Sign(k, m)
	if err != nil {
		t.Fatal(err)
	}
	return sm
}

// A frame header over 1 MiB is answered with message_too_large before the body is read,
// and the connection is closed.
func TestFrameLimit(t *testing.T) {
	b := newTestNode(t, 2, Options{})
	b.listen(t)
	conn := b.dial(t, newSeedKey(1))
	ack, err := conn.SendHeader(MaxFrame + 1)
	if err != nil {
		t.Fatalf("SendHeader() error = %v", err)
	}
	if ack.Code != reasons.MessageTooLarge || !strings.Contains(ack.Detail, "frame: 1048577 bytes, more than the limit of 1048576") {
		t.Fatalf("ack = %+v, want message_too_large naming the frame limit", ack)
	}
	if _, err := conn.SendRaw([]byte("next")); err == nil {
		t.Fatal("connection still served after an oversized frame")
	}
	// The sender's own side refuses to build such a frame.
	if err := writeFrame(discard{}, make([]byte, MaxFrame+1)); err == nil || !strings.Contains(err.Error(), "frame:") {
		t.Fatalf("writeFrame(1 MiB + 1) = %v, want a frame size error", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// The per-peer token bucket refuses what exceeds Burst, per peer, and refills with time.
func TestRateLimit(t *testing.T) {
	clk := &clock{t: time.Now().UTC()}
	b := newTestNode(t, 2, Options{Now: clk.Now, Rates: Rates{Stranger: RateLimit{Burst: 3, PerMinute: 6}}})
	b.listen(t)
	a, c := newSeedKey(1), newSeedKey(3)
	connA, connC := b.dial(t, a), b.dial(t, c)
	send := func(conn *Conn, k seedKey, i int) Ack {
		t.Helper()
		ack, err := conn.Send(task(t, k, b.key.AID(), "m-"+string(rune('a'+i)), "ix-"+string(rune('a'+i)), "t", clk.Now()))
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	for i := 0; i < 3; i++ {
		if ack := send(connA, a, i); ack.Status != StatusAccepted {
			t.Fatalf("task %d within the burst = %+v, want accepted", i, ack)
		}
	}
	ack := send(connA, a, 3)
	if ack.Code != CodeRateLimited || !strings.Contains(ack.Detail, "3 messages at once") {
		t.Fatalf("task over the burst = %+v, want %s naming the limit", ack, CodeRateLimited)
	}
	// The limit is checked before the frame is parsed or its signature verified: a peer
	// over its limit costs no crypto and no database work, whatever it sends.
	forged := task(t, a, b.key.AID(), "m-forged", "ix-forged", "t", clk.Now()).Raw()
	forged[len(forged)-1] ^= 1
	for _, raw := range [][]byte{[]byte("garbage"), forged} {
		if ack, err := connA.SendRaw(raw); err != nil || ack.Code != CodeRateLimited {
			t.Fatalf("SendRaw(%.20q) over the burst = %+v, %v, want %s before any parsing", raw, ack, err, CodeRateLimited)
		}
	}
	if ack := send(connC, c, 0); ack.Status != StatusAccepted {
		t.Fatalf("another peer's task = %+v, want accepted (buckets are per peer)", ack)
	}
	clk.Add(10 * time.Second) // 6 a minute: one token back
	if ack := send(connA, a, 4); ack.Status != StatusAccepted {
		t.Fatalf("task after refill = %+v, want accepted", ack)
	}
	if ack := send(connA, a, 5); ack.Code != CodeRateLimited {
		t.Fatalf("second task after one refill = %+v, want rate limited", ack)
	}
	if n := len(b.inbox(t)); n != 5 {
		t.Fatalf("inbox rows = %d, want 5 (4 from A, 1 from C)", n)
	}
}

func TestWindowAndBackoff(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		sent time.Time
		want bool
	}{
		{"now", now, true},
		{"10 min ago", now.Add(-10 * time.Minute), true},
		{"just over 10 min ago", now.Add(-10*time.Minute - time.Nanosecond), false},
		{"2 min ahead", now.Add(2 * time.Minute), true},
		{"just over 2 min ahead", now.Add(2*time.Minute + time.Nanosecond), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DefaultWindow.check(tc.sent, now); got != tc.want {
				t.Fatalf("check(%s) = %v, want %v", tc.sent, got, tc.want)
			}
		})
	}
	b := Backoff{Base: time.Second, Max: time.Minute}
	for _, tc := range []struct {
		attempts int
		min      time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {4, 8 * time.Second}, {7, time.Minute}, {60, time.Minute}} {
		t.Run("backoff", func(t *testing.T) {
			d := b.Delay(tc.attempts)
			if d < tc.min || d > tc.min+tc.min/5 {
				t.Fatalf("Delay(%d) = %s, want %s plus at most 20%%", tc.attempts, d, tc.min)
			}
		})
	}
}

// The node-wide bucket bounds many keys together: new keys cost an attacker nothing.
func TestNodeRateLimit(t *testing.T) {
	clk := &clock{t: time.Now().UTC()}
	b := newTestNode(t, 2, Options{Now: clk.Now, Rates: Rates{Strangers: RateLimit{Burst: 2, PerMinute: 1}}})
	b.listen(t)
	for i, want := range []Status{StatusAccepted, StatusAccepted, StatusRefused} {
		k := newSeedKey(byte(10 + i))
		ack, err := b.dial(t, k).Send(task(t, k, b.key.AID(), "m-1", "ix-1", "t", clk.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Status != want || (want == StatusRefused && (ack.Code != CodeRateLimited || !strings.Contains(ack.Detail, "node-wide"))) {
			t.Fatalf("task from key %d = %+v, want %s (node-wide limit 2)", i, ack, want)
		}
	}
	if n := len(b.inbox(t)); n != 2 {
		t.Fatalf("inbox rows = %d, want 2", n)
	}
}
