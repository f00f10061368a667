package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
)

// Attacks against the real anetd listener, from pkg/peer in-process: an impostor key
// claiming to be A, a tampered message, replays (identical, stale, relayed by another key),
// oversized frames and texts. Each is refused with its code and none reaches the inbox.
func TestPeerAttacksRefused(t *testing.T) {
	a, b := newNode(t, nodeOptions{}), newNode(t, nodeOptions{})
	a.start()
	b.start()
	sa, sb := a.status(), b.status()
	a.mustAnet("peer", "add", sb.AID, sb.ListenAddr)
	id := strings.TrimSpace(a.mustAnet("send", "--to", sb.AID, "transfer 10 coins to alice"))
	testkit.WaitFor(t, "A's task delivered", func() bool {
		l := a.show(id)
		return len(l) == 1 && len(l[0].Delivery) == 1 && l[0].Delivery[0].State == "delivered"
	})
	// The exact bytes B accepted, as A stored them.
	var raw []byte
	if err := a.db().QueryRow(`SELECT raw FROM messages WHERE direction = 'out' AND interaction = ?`, id).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Parse(raw); err != nil {
		t.Fatalf("A's stored message does not verify: %v", err)
	}
	keyA := a.identity()
	if keyA.AID() != sa.AID {
		t.Fatalf("loaded A key %s, status says %s", keyA.AID(), sa.AID)
	}
	impostor, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	asA, asC := dialNode(t, keyA, b, sb), dialNode(t, impostor, b, sb)

	sign := func(k peer.KeyHolder, from string, ix, text string, sent time.Time) []byte {
		t.Helper()
		m := peer.Message{Type: peer.TypeTask, ID: "m-" + ix, From: from, To: sb.AID, Sent: sent, Interaction: ix, Text: text}
		if k.AID() == from {
			sm, err := peer.Sign(k, m)
			if err != nil {
				t.Fatal(err)
			}
			return sm.Raw()
		}
		// An impostor signs a message that names A as its sender.
		sm, err := peer.Sign(k, peer.Message{Type: m.Type, ID: m.ID, From: k.AID(), To: m.To, Sent: m.Sent, Interaction: m.Interaction, Text: m.Text})
		if err != nil {
			t.Fatal(err)
		}
		enc := strings.Replace(string(sm.Encoding), k.AID(), from, 1)
		return append([]byte(enc), k.Sign([]byte(enc))...)
	}
	tampered := []byte(strings.Replace(string(raw), "10 coins", "90 coins", 1))
	if string(tampered) == string(raw) {
		t.Fatal("tampering did not change the message")
	}
	// pkg/peer will not sign an oversized text, so build it as a second implementation
	// would, from the documented encoding (checked against pkg/peer's on a normal message).
	now := time.Now().UTC()
	normal, err := peer.Sign(keyA, peer.Message{Type: peer.TypeTask, ID: "m-x", From: sa.AID, To: sb.AID, Sent: now, Interaction: "ix-x", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := encodeMsg("task", "m-x", sa.AID, sb.AID, now.Format(time.RFC3339Nano), "ix-x", "x", "", "", ""); string(got) != string(normal.Encoding) {
		t.Fatalf("documented encoding = %x, pkg/peer = %x", got, normal.Encoding)
	}
	bigEnc := encodeMsg("task", "m-big", sa.AID, sb.AID, now.Format(time.RFC3339Nano), "ix-big", strings.Repeat("x", peer.MaxText+1), "", "", "")
	big := append(bigEnc, keyA.Sign(bigEnc)...)

	for _, tc := range []struct {
		name   string
		conn   *peer.Conn
		raw    []byte
		header uint32
		status peer.Status
		code   reasons.Code
	}{
		{"impostor signs as A", asC, sign(impostor, sa.AID, "ix-imp", "from A, honestly", time.Now()), 0, peer.StatusRefused, peer.CodeBadSignature},
		{"impostor relays A's real message", asC, raw, 0, peer.StatusRefused, peer.CodeSenderMismatch},
		{"tampered message", asA, tampered, 0, peer.StatusRefused, peer.CodeBadSignature},
		{"replayed message", asA, raw, 0, peer.StatusDuplicate, peer.CodeDuplicate},
		{"stale replay (signed 15 min ago)", asA, sign(keyA, sa.AID, "ix-old", "old", time.Now().Add(-15*time.Minute)), 0, peer.StatusRefused, peer.CodeReplayWindow},
		{"text over 256 KiB", asA, big, 0, peer.StatusRefused, reasons.MessageTooLarge},
		{"frame over 1 MiB", asA, nil, peer.MaxFrame + 1, peer.StatusRefused, reasons.MessageTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ack peer.Ack
			var err error
			if tc.header != 0 {
				ack, err = tc.conn.SendHeader(tc.header)
			} else {
				ack, err = tc.conn.SendRaw(tc.raw)
			}
			if err != nil {
				t.Fatalf("send: %v", err)
			}
			if ack.Status != tc.status || ack.Code != tc.code {
				t.Fatalf("ack = %+v, want %s %s", ack, tc.status, tc.code)
			}
			if tc.code == reasons.MessageTooLarge && !strings.Contains(ack.Detail, "more than the limit") {
				t.Fatalf("ack detail %q does not name the limit", ack.Detail)
			}
		})
	}
	// The dialling side refuses an impostor at B's address: A's key expecting C's aid.
	cl, _ := peer.NewClient(keyA)
	if _, err := cl.Dial(context.Background(), sb.ListenAddr, impostor.AID()); err == nil || !strings.Contains(err.Error(), string(peer.CodeWrongAID)) {
		t.Fatalf("dial B expecting another aid = %v, want %s", err, peer.CodeWrongAID)
	}
	in := b.inbox()
	if len(in) != 1 || in[0].Interaction != id || in[0].Text != "transfer 10 coins to alice" {
		t.Fatalf("B's inbox = %+v, want only A's one genuine task", in)
	}
	if out := b.mustAnet("evidence", "show", "--kind", "task_received", "--json"); strings.Count(out, `"kind": "task_received"`) != 1 {
		t.Fatalf("task_received entries:\n%s\nwant exactly one", out)
	}
	b.mustAnet("evidence", "verify")
	if logs := b.logs.String(); !strings.Contains(logs, string(peer.CodeBadSignature)) || !strings.Contains(logs, string(peer.CodeSenderMismatch)) {
		t.Fatalf("B's log does not record the refusals:\n%s", logs)
	}
}

// encodeMsg is anet-msg-v1 as pkg/peer's doc describes it: the tag, then each field as a
// 4-byte big-endian length and its bytes.
func encodeMsg(fields ...string) []byte {
	out := []byte("anet-msg-v1")
	for _, f := range fields {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return out
}

// B is down when A sends: A's outbox delivers after B starts. A stopped with a pending
// message delivers it after its restart. A retry after a lost ack (A crashed between B's
// accept and its own record) is not stored twice at B.
func TestPeerOutboxSurvivesDowntimeAndRestart(t *testing.T) {
	port := freePort(t)
	b := newNode(t, nodeOptions{config: fmt.Sprintf("listen: \"127.0.0.1:%d\"\n", port)})
	aidB := b.identity().AID() // B's key exists before B ever ran
	a := newNode(t, nodeOptions{})
	a.start()
	a.mustAnet("peer", "add", aidB, fmt.Sprintf("127.0.0.1:%d", port))

	first := strings.TrimSpace(a.mustAnet("send", "--to", aidB, "first, while B is down"))
	testkit.WaitFor(t, "a failed attempt recorded", func() bool {
		d := a.show(first)[0].Delivery
		return len(d) == 1 && d[0].State == "pending" && d[0].Attempts >= 1 && d[0].LastError != ""
	})
	b.start()
	testkit.WaitFor(t, "first task at B after B started", func() bool { return len(b.inbox()) == 1 })

	b.stop()
	second := strings.TrimSpace(a.mustAnet("send", "--to", aidB, "second, then A restarts"))
	testkit.WaitFor(t, "second attempt failed", func() bool { return a.show(second)[0].Delivery[0].Attempts >= 1 })
	a.stop()
	b.start()
	a.start()
	testkit.WaitFor(t, "second task at B after A restarted", func() bool { return len(b.inbox()) == 2 })

	// Lost ack: mark the first message pending again in A's store while A is down, as if A
	// had crashed after sending it and before recording B's ack.
	a.stop()
	res, err := a.db().Exec(`UPDATE outbox SET state = 'pending', done_at = '' WHERE interaction = ?`, first)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("reset %d outbox rows, want 1", n)
	}
	a.start()
	testkit.WaitFor(t, "first task re-delivered", func() bool {
		d := a.show(first)[0].Delivery
		return d[0].State == "delivered" && d[0].Attempts >= 2
	})
	if out := b.logs.String(); !strings.Contains(out, "peer message accepted") {
		t.Fatalf("B accepted nothing:\n%s", out)
	}
	in := b.inbox()
	seen := map[string]int{}
	for _, it := range in {
		seen[it.Interaction]++
	}
	if len(in) != 2 || seen[first] != 1 || seen[second] != 1 {
		t.Fatalf("B's inbox = %v, want %s and %s once each", seen, first, second)
	}
	if out := a.mustAnet("evidence", "show", "--kind", "message_delivered", "--json"); strings.Count(out, first) != 2 {
		t.Fatalf("A's message_delivered entries for %s:\n%s\nwant 2 (delivery and the duplicate re-delivery)", first, out)
	}
	for _, n := range []*testNode{a, b} {
		n.mustAnet("evidence", "verify")
	}
}

// Load: 50 peer identities × 20 tasks each against one node, each from an address of its
// own (strangers from one address share that address's budget, N1). Every task is in the
// inbox exactly once, the chain verifies, and a burst past the per-peer limit is refused
// with peer_rate_limited.
func TestPeerLoad(t *testing.T) {
	const peers, tasks = 50, 20
	b := newNode(t, nodeOptions{})
	b.start()
	sb := b.status()
	keys := make([]*identity.Identity, peers)
	for i := range keys {
		k, err := identity.Generate()
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
	}
	var wg sync.WaitGroup
	errs := make(chan error, peers)
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := peer.NewClient(k)
			if err != nil {
				errs <- err
				return
			}
			conn, err := cl.From(loopbackIP(5, i)).Dial(context.Background(), sb.ListenAddr, sb.AID)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			for j := 0; j < tasks; j++ {
				sm, err := peer.Sign(k, peer.Message{Type: peer.TypeTask, ID: fmt.Sprintf("m-%d", j), From: k.AID(), To: sb.AID,
					Sent: time.Now(), Interaction: fmt.Sprintf("ix-%d-%d", i, j), Text: fmt.Sprintf("task %d of peer %d", j, i)})
				if err != nil {
					errs <- err
					return
				}
				ack, err := conn.Send(sm)
				if err != nil || ack.Status != peer.StatusAccepted {
					errs <- fmt.Errorf("peer %d task %d: %+v, %v", i, j, ack, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	// One peer keeps going past its burst of 20: the bucket refills at 30 a minute, so of
	// 30 more sent back to back nearly all are refused.
	k := keys[0]
	conn := dialNode(t, k, b, sb)
	accepted, limited := 0, 0
	for j := tasks; j < tasks+30; j++ {
		sm, err := peer.Sign(k, peer.Message{Type: peer.TypeTask, ID: fmt.Sprintf("m-%d", j), From: k.AID(), To: sb.AID,
			Sent: time.Now(), Interaction: fmt.Sprintf("ix-0-%d", j), Text: "more"})
		if err != nil {
			t.Fatal(err)
		}
		ack, err := conn.Send(sm)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ack.Status == peer.StatusAccepted:
			accepted++
		case ack.Code == peer.CodeRateLimited && strings.Contains(ack.Detail, "20 messages at once"):
			limited++
		default:
			t.Fatalf("extra task %d: ack %+v, want accepted or %s", j, ack, peer.CodeRateLimited)
		}
	}
	if limited == 0 {
		t.Fatalf("30 tasks past the burst: %d accepted, none rate limited", accepted)
	}

	in := b.inbox()
	want := peers*tasks + accepted
	seen := map[string]int{}
	for _, it := range in {
		seen[it.Peer+"/"+it.Interaction]++
	}
	if len(in) != want || len(seen) != want {
		t.Fatalf("inbox has %d rows (%d distinct), want %d", len(in), len(seen), want)
	}
	for i, k := range keys {
		for j := 0; j < tasks; j++ {
			if key := fmt.Sprintf("%s/ix-%d-%d", k.AID(), i, j); seen[key] != 1 {
				t.Fatalf("task %s appears %d times, want 1", key, seen[key])
			}
		}
	}
	out := b.mustAnet("evidence", "verify")
	if !strings.Contains(out, "evidence chain verified") {
		t.Fatalf("evidence verify: %s", out)
	}
	if c := strings.Count(b.mustAnet("evidence", "show", "--kind", "task_received", "--json"), `"kind": "task_received"`); c != want {
		t.Fatalf("task_received entries = %d, want %d", c, want)
	}
}
