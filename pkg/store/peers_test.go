package store

import (
	"anet.dev/anet/pkg/reasons"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"
)

// otherPeer is a second valid aid (seed 100..131).
const otherPeer = "anbo6di2sxmz6dqajaxwoh7v7fduwf7x7kg7gs6w7uawzmnp3pfv4a"

func incoming(typ, msgID, interaction, text string) Incoming {
	in := Incoming{Type: typ, MsgID: msgID, Peer: goldenPeer, Interaction: interaction, Text: text,
		Sent: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), Raw: []byte("signed bytes of " + msgID)}
	in.ContentHash = sha256.Sum256([]byte(typ + interaction + text))
	in.Digest = sha256.Sum256(in.Raw)
	return in
}

func TestPeersAndTrust(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	if err := s.AddPeer(ctx, signer, "not-an-aid", "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "peer") {
		t.Fatalf("AddPeer(bad aid) = %v, want an error naming the peer", err)
	}
	if err := s.AddPeer(ctx, signer, goldenPeer, "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPeer(ctx, signer, goldenPeer, "127.0.0.1:2"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTrust(ctx, signer, goldenPeer); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTrust(ctx, signer, goldenPeer); err != nil {
		t.Fatal(err)
	}
	ps, err := s.Peers(ctx)
	if err != nil || len(ps) != 1 || ps[0].Addr != "127.0.0.1:2" || !ps[0].Trusted {
		t.Fatalf("Peers() = %+v, %v, want one trusted peer at 127.0.0.1:2", ps, err)
	}
	for _, tc := range []struct {
		name string
		fn   func() error
	}{
		{"remove unknown peer", func() error { return s.RemovePeer(ctx, signer, otherPeer) }},
		{"remove unknown trust", func() error { return s.RemoveTrust(ctx, signer, otherPeer) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fn(); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s = %v, want ErrNotFound", tc.name, err)
			}
		})
	}
	if err := s.RemoveTrust(ctx, signer, goldenPeer); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Trusted(ctx, goldenPeer); ok || err != nil {
		t.Fatalf("Trusted after remove = %v, %v, want false", ok, err)
	}
	// Each change is one entry; the repeated trust add changed nothing and recorded nothing.
	kinds := chainKinds(t, s)
	if want := "peer_added,peer_added,trust_added,trust_removed"; kinds != want {
		t.Fatalf("chain kinds = %s, want %s", kinds, want)
	}
}

func chainKinds(t *testing.T, s *Store) string {
	t.Helper()
	es, err := s.List(context.Background(), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var k []string
	for _, e := range es {
		k = append(k, e.Kind)
	}
	return strings.Join(k, ",")
}

func TestReceiveRules(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(100)
	if _, err := s.Receive(ctx, signer, incoming("task", "m-1", "ix-1", "hello")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   Incoming
		want error
	}{
		{"same message again", incoming("task", "m-1", "ix-1", "hello"), ErrDuplicate},
		{"same id, other content", incoming("task", "m-1", "ix-9", "other"), ErrIDReused},
		{"same interaction, new id", incoming("task", "m-2", "ix-1", "again"), ErrInteractionReused},
		{"reply to a task never sent", incoming("reply", "m-3", "ix-1", "answer"), ErrUnknownInteraction},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Receive(ctx, signer, tc.in); !errors.Is(err, tc.want) {
				t.Fatalf("Receive(%s) = %v, want %v", tc.name, err, tc.want)
			}
		})
	}
	in, err := s.Inbox(ctx, InboxOptions{})
	if err != nil || len(in) != 1 || in[0].State != StateNew || in[0].Text != "hello" {
		t.Fatalf("Inbox() = %+v, %v, want the one task", in, err)
	}
	if got := chainKinds(t, s); got != "task_received" {
		t.Fatalf("chain kinds = %s, want only task_received", got)
	}

	// Answering: once, then never again.
	it, err := s.Queue(ctx, signer, Outgoing{Type: "reply", MsgID: "m-r", Peer: goldenPeer, Interaction: "ix-1", Text: "hi"})
	if err != nil || it.State != StateAnswered || len(it.Delivery) != 1 || it.Delivery[0].State != "pending" {
		t.Fatalf("Queue(reply) = %+v, %v, want answered with a pending delivery", it, err)
	}
	if _, err := s.Queue(ctx, signer, Outgoing{Type: "refusal", MsgID: "m-r2", Peer: goldenPeer, Interaction: "ix-1", Code: "budget"}); !errors.Is(err, ErrAlreadyAnswered) {
		t.Fatalf("second answer = %v, want ErrAlreadyAnswered", err)
	}
	if _, err := s.Queue(ctx, signer, Outgoing{Type: "reply", MsgID: "m-r3", Peer: otherPeer, Interaction: "ix-1", Text: "hi"}); !errors.Is(err, ErrUnknownInteraction) {
		t.Fatalf("answer to another peer's interaction = %v, want ErrUnknownInteraction", err)
	}
	// The dashboard's "out" list: the tasks this node sent, and only those.
	if _, err := s.Queue(ctx, signer, Outgoing{Type: "task", MsgID: "m-o", Peer: otherPeer, Interaction: "ix-out", Text: "asked"}); err != nil {
		t.Fatal(err)
	}
	sent, err := s.Inbox(ctx, InboxOptions{Sent: true})
	if err != nil || len(sent) != 1 || sent[0].Direction != "out" || sent[0].Text != "asked" || sent[0].State != StateWaiting {
		t.Fatalf("Inbox(Sent) = %+v, %v, want the one task sent, waiting", sent, err)
	}
	if in, err := s.Inbox(ctx, InboxOptions{}); err != nil || len(in) != 1 || in[0].ID != "ix-1" {
		t.Fatalf("Inbox() = %+v, %v, want only the task received", in, err)
	}
	if _, err := s.Verify(ctx, signer.Public()); err != nil {
		t.Fatal(err)
	}
}

// The inbox row and its evidence entry commit together: when the entry cannot be
// appended (here: another node key than the chain's), no row is left behind.
func TestReceiveIsAtomicWithEvidence(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if _, err := s.Append(ctx, newSeedSigner(1), EntryInput{Kind: "node_started"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Receive(ctx, newSeedSigner(2), incoming("task", "m-1", "ix-1", "hello"))
	if err == nil || !strings.Contains(err.Error(), "not the key of this chain") {
		t.Fatalf("Receive with a foreign key = %v, want the chain key error", err)
	}
	var rows int
	for _, table := range []string{"interactions", "messages"} {
		s.DB().QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&rows)
		if rows != 0 {
			t.Fatalf("%s rows after a failed receive = %d, want 0", table, rows)
		}
	}
}

// queueTask queues task m-1 to otherPeer (at 127.0.0.1:9) and returns it as DueOutbox does.
func queueTask(t *testing.T, s *Store, signer Signer) OutboxItem {
	t.Helper()
	ctx := context.Background()
	if err := s.AddPeer(ctx, signer, otherPeer, "127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Queue(ctx, signer, Outgoing{Type: "task", MsgID: "m-1", Peer: otherPeer, Interaction: "ix-1", Text: "t"}); err != nil {
		t.Fatal(err)
	}
	due, err := s.DueOutbox(ctx, time.Now().Add(time.Second), 10)
	if err != nil || len(due) != 1 || due[0].Addr != "127.0.0.1:9" {
		t.Fatalf("DueOutbox() = %+v, %v, want the task with the peer's address", due, err)
	}
	return due[0]
}

func TestOutboxSchedule(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	item := queueTask(t, s, newSeedSigner(1))
	later := time.Now().Add(time.Hour)
	if err := s.RetryLater(ctx, item.ID, later, "connection refused"); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.DueOutbox(ctx, time.Now(), 10); len(due) != 0 {
		t.Fatalf("DueOutbox(now) after a retry an hour out = %d items, want 0", len(due))
	}
	if next, ok, err := s.NextOutboxAttempt(ctx); !ok || err != nil || next.UnixNano() != later.UnixNano() {
		t.Fatalf("NextOutboxAttempt() = %v, %v, %v, want %v", next, ok, err, later)
	}
	d, err := s.OutboxState(ctx, "m-1")
	if err != nil || d.Attempts != 1 || d.LastError != "connection refused" || d.State != "pending" {
		t.Fatalf("OutboxState() = %+v, %v", d, err)
	}
}

// A message's evidence entry records its size, code and until, never its text: the chain is
// a record of decisions, and a task's text stays in the interactions table.
func TestMessageEvidenceDetails(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	const text = "secret task text"
	if _, err := s.Receive(ctx, signer, incoming("task", "m-1", "ix-1", text)); err != nil {
		t.Fatal(err)
	}
	until := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	if _, err := s.Queue(ctx, signer, Outgoing{Type: "refusal", MsgID: "m-r", Peer: goldenPeer, Interaction: "ix-1", Code: "budget", Until: until}); err != nil {
		t.Fatal(err)
	}
	entries, err := s.List(ctx, ListOptions{})
	if err != nil || len(entries) != 2 {
		t.Fatalf("List() = %d entries, %v; want 2", len(entries), err)
	}
	for _, tc := range []struct {
		name    string
		e       Entry
		want    []string
		notWant []string
	}{
		{"task_received", entries[0], []string{`"msg_id":"m-1"`, `"text_bytes":16`, `"sent":"2026-11-29T08:00:00Z"`}, []string{text, `"code"`, `"until"`}},
		{"refusal_sent", entries[1], []string{`"msg_id":"m-r"`, `"code":"budget"`, `"until":"2026-11-30T00:00:00Z"`}, []string{`"text_bytes"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := string(tc.e.Details)
			if tc.e.Kind != tc.name {
				t.Fatalf("entry kind = %s, want %s", tc.e.Kind, tc.name)
			}
			for _, w := range tc.want {
				if !strings.Contains(d, w) {
					t.Errorf("details = %s, want %s in it", d, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(d, w) {
					t.Errorf("details = %s, want no %s in it", d, w)
				}
			}
		})
	}
}

// A second outcome for a message already settled (a late ack after a retry) changes
// nothing: no second messages row, no second message_delivered or delivery_failed entry.
func TestSettledMessageRecordedOnce(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	item := queueTask(t, s, signer)
	for i := 0; i < 2; i++ {
		if err := s.Delivered(ctx, signer, item, []byte("raw"), [32]byte{1}, [32]byte{2}); err != nil {
			t.Fatalf("Delivered() #%d = %v", i+1, err)
		}
	}
	if err := s.DeliveryFailed(ctx, signer, item, "peer_wrong_recipient", "late refusal"); err != nil {
		t.Fatalf("DeliveryFailed() after delivery = %v", err)
	}
	if got, want := chainKinds(t, s), "peer_added,task_sent,message_delivered"; got != want {
		t.Fatalf("chain kinds = %s, want %s", got, want)
	}
	var rows int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM messages WHERE direction = 'out'`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("outgoing messages rows = %d, %v, want 1", rows, err)
	}
	if d, err := s.OutboxState(ctx, "m-1"); err != nil || d.State != "delivered" || d.Attempts != 1 {
		t.Fatalf("OutboxState() = %+v, %v, want delivered after 1 attempt", d, err)
	}
}

// TestAddPeerRefusesBadAddrC4: the store checks a peer address again where it is recorded,
// so no caller that skipped the check (or a new one) keeps an address the sender would
// retry forever.
func TestAddPeerRefusesBadAddrC4(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	for _, addr := range []string{"my host:7420", "bad_host!:7420", "a..b:7420", strings.Repeat("a", 300) + ":1"} {
		if err := s.AddPeer(ctx, signer, goldenPeer, addr); reasons.CodeOf(err) != reasons.BadPeerAddr {
			t.Errorf("AddPeer(%q) = %v, want %s", addr, err, reasons.BadPeerAddr)
		}
	}
	if ps, err := s.Peers(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("Peers() after refused adds = %+v, %v, want none", ps, err)
	}
}
