package peer

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/reasons"
)

// recObserver records what an Observer hears, as "event class code" strings.
type recObserver struct {
	mu     sync.Mutex
	events map[string]int
}

func (r *recObserver) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.events == nil {
		r.events = map[string]int{}
	}
	r.events[e]++
}

func (r *recObserver) IntakeAdmitted(class string)         { r.add("admitted " + class) }
func (r *recObserver) IntakeTurnedAway(class, code string) { r.add("away " + class + " " + code) }
func (r *recObserver) Refused(code string)                 { r.add("refused " + code) }

func (r *recObserver) count(e string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[e]
}

// The observer (the node's metrics) hears each message intake stores and each one it
// refuses, by the sender's class, each connection turned away before the handshake as
// unauthenticated, and each refusal sent to a requester, by code.
func TestObserverHearsIntakeAndRefusals(t *testing.T) {
	obs := &recObserver{}
	b := newTestNode(t, 2, Options{Observer: obs})
	b.listen(t)
	ctx := context.Background()
	stranger, trusted := newSeedKey(1), newSeedKey(3)
	if err := b.store.AddTrust(ctx, b.key, trusted.AID()); err != nil {
		t.Fatal(err)
	}
	b.svc.PeersChanged()

	now := time.Now()
	if ack := send(t, b.dial(t, stranger), stranger, b.key.AID(), "hello", now); ack.Status != StatusAccepted {
		t.Fatalf("stranger's task: %+v", ack)
	}
	if ack := send(t, b.dial(t, trusted), trusted, b.key.AID(), "hello", now); ack.Status != StatusAccepted {
		t.Fatalf("trusted peer's task: %+v", ack)
	}
	if ack := send(t, b.dial(t, stranger), stranger, b.key.AID(), "late", now.Add(-time.Hour)); ack.Code != CodeReplayWindow {
		t.Fatalf("stranger's old task: %+v, want %s", ack, CodeReplayWindow)
	}
	c := rawFrom(t, "127.0.0.9", b.addr)
	c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	io.Copy(io.Discard, c)

	testkit.WaitFor(t, "the bad handshake counted", func() bool { return obs.count("away unauthenticated handshake_failed") == 1 })
	for e, n := range map[string]int{"admitted stranger": 1, "admitted trusted": 1, "away stranger " + string(CodeReplayWindow): 1} {
		if got := obs.count(e); got != n {
			t.Errorf("observer heard %q %d times, want %d (all: %v)", e, got, n, obs.events)
		}
	}

	inbox := b.inbox(t)
	if len(inbox) != 2 {
		t.Fatalf("inbox has %d tasks, want 2", len(inbox))
	}
	if err := b.svc.Refuse(ctx, inbox[0].Peer, inbox[0].ID, reasons.SandboxUnavailable, time.Time{}); err != nil {
		t.Fatal(err)
	}
	// A refusal that is not sent (the task was answered already) is not counted.
	if err := b.svc.Refuse(ctx, inbox[0].Peer, inbox[0].ID, reasons.SandboxUnavailable, time.Time{}); err == nil {
		t.Fatal("a second refusal of one task was queued")
	}
	if got := obs.count("refused " + string(reasons.SandboxUnavailable)); got != 1 {
		t.Fatalf("observer heard %d refusals, want 1", got)
	}
}
