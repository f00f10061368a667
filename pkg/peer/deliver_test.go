package peer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

var fastBackoff = Backoff{Base: 20 * time.Millisecond, Max: 200 * time.Millisecond}

func outState(t *testing.T, n *testNode, id string) store.Interaction {
	t.Helper()
	list, err := n.store.Interactions(context.Background(), id)
	if err != nil || len(list) != 1 {
		t.Fatalf("Interactions(%s) = %+v, %v, want one", id, list, err)
	}
	return list[0]
}

func delivered(it store.Interaction) bool {
	return len(it.Delivery) > 0 && it.Delivery[len(it.Delivery)-1].State == "delivered"
}

// A task goes out through the outbox, the answer comes back to the address the task came
// from (B has no peers entry for A), and both chains record every message.
func TestSendReplyRoundTrip(t *testing.T) {
	a := newTestNode(t, 1, Options{Backoff: fastBackoff})
	b := newTestNode(t, 2, Options{Backoff: fastBackoff})
	a.listen(t)
	b.listen(t)
	a.svc.Start()
	b.svc.Start()
	ctx := context.Background()
	if err := a.store.AddPeer(ctx, a.key, b.key.AID(), b.addr); err != nil {
		t.Fatal(err)
	}
	it, err := a.svc.Send(ctx, b.key.AID(), "what is 2+2?")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "task in B's inbox", func() bool { return len(b.inbox(t)) == 1 })
	got := b.inbox(t)[0]
	if got.ID != it.ID || got.Text != "what is 2+2?" || got.Peer != a.key.AID() {
		t.Fatalf("B's inbox = %+v, want A's task %s", got, it.ID)
	}
	testkit.WaitFor(t, "A's task marked delivered", func() bool { return delivered(outState(t, a, it.ID)) })
	if _, err := b.svc.Answer(ctx, a.key.AID(), it.ID, "4"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Answer(ctx, a.key.AID(), it.ID, "5"); !errors.Is(err, store.ErrAlreadyAnswered) {
		t.Fatalf("second answer error = %v, want ErrAlreadyAnswered", err)
	}
	testkit.WaitFor(t, "reply at A", func() bool { return outState(t, a, it.ID).State == store.StateAnswered })
	if got := outState(t, a, it.ID); got.AnswerText != "4" || got.AnswerType != "reply" {
		t.Fatalf("A's interaction = %+v, want reply 4", got)
	}
	// B records message_delivered when A's ack for the reply arrives, which may be just
	// after A has stored the reply: wait for it rather than race it.
	testkit.WaitFor(t, "B's reply marked delivered", func() bool {
		entries, err := b.store.List(ctx, store.ListOptions{Kind: "message_delivered"})
		return err == nil && len(entries) == 1
	})
	for _, tc := range []struct {
		node  *testNode
		kinds []string
	}{
		{a, []string{"peer_added", "task_sent", "message_delivered", "reply_received"}},
		{b, []string{"task_received", "reply_sent", "message_delivered"}},
	} {
		entries, err := tc.node.store.List(ctx, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, e := range entries {
			kinds = append(kinds, e.Kind)
		}
		if len(kinds) != len(tc.kinds) {
			t.Fatalf("chain kinds = %v, want %v", kinds, tc.kinds)
		}
		for i := range kinds {
			if kinds[i] != tc.kinds[i] {
				t.Fatalf("chain kinds = %v, want %v", kinds, tc.kinds)
			}
		}
		if _, err := tc.node.store.Verify(ctx, tc.node.key.Public()); err != nil {
			t.Fatalf("Verify() = %v", err)
		}
	}
}

// B is down when A sends; A retries with back-off and delivers once B listens. A restarted
// with a pending message delivers it, and a retry after a lost ack is not stored twice.
func TestOutboxSurvivesDowntimeAndRestart(t *testing.T) {
	ctx := context.Background()
	b := newTestNode(t, 2, Options{})
	a := newTestNode(t, 1, Options{Backoff: fastBackoff})
	a.svc.Start()
	// Reserve B's address but do not serve it yet.
	b.listen(t)
	b.svc.server.Close()
	if err := a.store.AddPeer(ctx, a.key, b.key.AID(), b.addr); err != nil {
		t.Fatal(err)
	}
	it, err := a.svc.Send(ctx, b.key.AID(), "are you there?")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "failed attempts recorded", func() bool {
		d := outState(t, a, it.ID).Delivery
		return len(d) == 1 && d[0].Attempts >= 2 && d[0].State == "pending" && d[0].LastError != ""
	})
	// B comes up on the same address.
	b2, err := New(Options{Identity: b.key, Store: b.store, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b2.Close)
	if _, err := b2.Listen(b.addr); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "delivered after B started", func() bool { return delivered(outState(t, a, it.ID)) })

	// A crashed after B stored the task but before A recorded the ack: the row is pending
	// again. A new service over the same store delivers it; B answers duplicate.
	a.svc.Close()
	if _, err := a.store.DB().Exec(`UPDATE outbox SET state = 'pending', done_at = '' WHERE msg_id = ?`, it.Delivery[0].MsgID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.DB().Exec(`DELETE FROM messages WHERE direction = 'out'`); err != nil {
		t.Fatal(err)
	}
	a2, err := New(Options{Identity: a.key, Store: a.store, Log: quietLog(), Backoff: fastBackoff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a2.Close)
	a2.Start()
	testkit.WaitFor(t, "delivered after A restarted", func() bool { return delivered(outState(t, a, it.ID)) })
	in := b.inbox(t)
	if len(in) != 1 || in[0].ID != it.ID {
		t.Fatalf("B's inbox = %+v, want exactly the one task", in)
	}
	n, _ := a.store.Count(ctx, store.CountFilter{Kinds: []string{"message_delivered"}})
	if n != 2 {
		t.Fatalf("message_delivered entries = %d, want 2 (first delivery and the retry)", n)
	}
}

// A refusal the peer will never accept ends the delivery with its code.
func TestPermanentRefusalEndsDelivery(t *testing.T) {
	ctx := context.Background()
	a := newTestNode(t, 1, Options{Backoff: fastBackoff})
	b := newTestNode(t, 2, Options{})
	b.listen(t)
	a.svc.Start()
	if err := a.store.AddPeer(ctx, a.key, b.key.AID(), b.addr); err != nil {
		t.Fatal(err)
	}
	// An answer to an interaction B never sent: B refuses with unknown_interaction.
	if _, err := a.store.DB().Exec(`INSERT INTO interactions(peer, interaction, direction, state, text, task_msg_id, sent_at, created_at, created_unix)
		VALUES (?, 'ix-made-up', 'in', 'new', 'x', 'm-x', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 0)`, b.key.AID()); err != nil {
		t.Fatal(err)
	}
	if err := a.svc.Refuse(ctx, b.key.AID(), "ix-made-up", reasons.SandboxUnavailable, time.Time{}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "delivery failed", func() bool {
		d := outState(t, a, "ix-made-up").Delivery
		return len(d) == 1 && d[0].State == "failed"
	})
	if d := outState(t, a, "ix-made-up").Delivery[0]; d.Attempts != 1 || !strings.Contains(d.LastError, string(CodeUnknownInteraction)) {
		t.Fatalf("delivery = %+v, want one attempt ending in %s", d, CodeUnknownInteraction)
	}
}

// echoEngine answers every task through the Responder, as the auto-reply engine will.
type echoEngine struct{}

func (echoEngine) HandleTask(ctx context.Context, t Task, r Responder) {
	if t.Text == "refuse me" {
		r.Refuse(ctx, t.Peer, t.Interaction, reasons.Budget, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		return
	}
	r.Reply(ctx, t.Peer, t.Interaction, "echo: "+t.Text)
}

// The engine seam: each new task reaches HandleTask, and its answers travel back.
func TestEngineAnswers(t *testing.T) {
	ctx := context.Background()
	a := newTestNode(t, 1, Options{Backoff: fastBackoff})
	b := newTestNode(t, 2, Options{Backoff: fastBackoff, Engine: echoEngine{}})
	a.listen(t)
	b.listen(t)
	a.svc.Start()
	b.svc.Start()
	if err := a.store.AddPeer(ctx, a.key, b.key.AID(), b.addr); err != nil {
		t.Fatal(err)
	}
	one, _ := a.svc.Send(ctx, b.key.AID(), "hello")
	two, _ := a.svc.Send(ctx, b.key.AID(), "refuse me")
	testkit.WaitFor(t, "both answered", func() bool {
		return outState(t, a, one.ID).State == store.StateAnswered && outState(t, a, two.ID).State == store.StateRefused
	})
	if got := outState(t, a, one.ID); got.AnswerText != "echo: hello" {
		t.Fatalf("reply = %q, want echo: hello", got.AnswerText)
	}
	got := outState(t, a, two.ID)
	if got.AnswerCode != string(reasons.Budget) || !got.AnswerUntil.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("refusal = %+v, want budget until 2026-12-01", got)
	}
}

// Refuse checks the budget/until rule before anything is queued: a refusal that could never
// be signed must not mark the task refused and then fail in the outbox.
func TestRefuseChecksUntilBeforeQueueing(t *testing.T) {
	b := newTestNode(t, 2, Options{})
	b.listen(t)
	a := newSeedKey(1)
	if ack, err := b.dial(t, a).Send(task(t, a, b.key.AID(), "m-1", "ix-1", "hi", time.Now())); err != nil || ack.Status != StatusAccepted {
		t.Fatalf("Send(task) = %+v, %v, want accepted", ack, err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		code  reasons.Code
		until time.Time
	}{
		{"budget without until", reasons.Budget, time.Time{}},
		{"until without budget", reasons.SandboxUnavailable, time.Now().Add(time.Hour)},
		{"code not [a-z_]", "Budget!", time.Time{}},
		{"until after the year 9999", reasons.Budget, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := b.svc.Refuse(ctx, a.AID(), "ix-1", tc.code, tc.until)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("Refuse(%s) error = %v, want an *InputError", tc.name, err)
			}
			if got := b.inbox(t); len(got) != 1 || got[0].State != store.StateNew || len(got[0].Delivery) != 0 {
				t.Fatalf("inbox after Refuse(%s) = %+v, want the task still new with nothing queued", tc.name, got)
			}
		})
	}
}
