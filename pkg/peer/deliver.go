package peer

import (
	"anet.dev/anet/pkg/peeraddr"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// Backoff is the retry schedule of the outbox: Base doubled per failed attempt, at most Max,
// plus up to 20% random jitter so many messages to one peer do not retry in lock-step.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// DefaultBackoff retries after 1 s, 2 s, 4 s, … and at least every 5 minutes.
var DefaultBackoff = Backoff{Base: time.Second, Max: 5 * time.Minute}

// Delay is the wait after the given number of failed attempts (1 for the first failure).
func (b Backoff) Delay(attempts int) time.Duration {
	d := b.Base
	for i := 1; i < attempts && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// batch is how many due messages one pass of the loop takes.
const batch = 200

// deliverLoop sends due outbox messages until ctx ends. Its first pass takes every pending
// message regardless of its schedule: a restart is a natural moment to retry.
func (s *Service) deliverLoop(ctx context.Context) {
	first := true
	for {
		before := s.o.Now()
		if first {
			before = before.Add(100 * 365 * 24 * time.Hour)
		}
		n := s.deliverDue(ctx, before)
		if ctx.Err() != nil {
			return
		}
		if n >= batch || (first && n > 0) {
			first = false
			continue
		}
		first = false
		wait := time.Hour
		if next, ok, err := s.o.Store.NextOutboxAttempt(ctx); err != nil {
			s.o.Log.Error("outbox", "err", err)
			wait = 5 * time.Second
		} else if ok {
			wait = max(next.Sub(s.o.Now()), 0)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// deliverDue sends the messages due before t, one connection per peer, peers in parallel
// (at most 8 at once). It returns how many messages it took.
func (s *Service) deliverDue(ctx context.Context, t time.Time) int {
	items, err := s.o.Store.DueOutbox(ctx, t, batch)
	if err != nil {
		if ctx.Err() == nil {
			s.o.Log.Error("outbox", "err", err)
		}
		return 0
	}
	byPeer := map[string][]store.OutboxItem{}
	var order []string
	for _, it := range items {
		if _, ok := byPeer[it.Peer]; !ok {
			order = append(order, it.Peer)
		}
		byPeer[it.Peer] = append(byPeer[it.Peer], it)
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, p := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func(list []store.OutboxItem) {
			defer wg.Done()
			defer func() { <-sem }()
			s.deliverPeer(ctx, list)
		}(byPeer[p])
	}
	wg.Wait()
	return len(items)
}

func (s *Service) deliverPeer(ctx context.Context, list []store.OutboxItem) {
	peer, addr := list[0].Peer, list[0].Addr
	// Outcomes are recorded even while the service stops: an ack already received must
	// not be lost to a cancelled context (the retry would be a harmless duplicate, but a
	// needless one).
	rctx := context.WithoutCancel(ctx)
	if addr == "" {
		for _, it := range list {
			s.retry(rctx, it, "no address for this peer: add it with `anet peer add AID ADDR`")
		}
		return
	}
	if err := peeraddr.Check("addr", addr); err != nil {
		// Recorded before the rule (or by hand): never dialled; the messages wait, like
		// those of a peer without an address, until `anet peer add` gives a valid one.
		for _, it := range list {
			s.retry(rctx, it, "the address for this peer is not valid ("+err.Error()+"): change it with `anet peer add AID HOST:PORT`")
		}
		return
	}
	conn, err := s.client.Dial(ctx, addr, peer)
	if err != nil {
		for _, it := range list {
			s.retry(rctx, it, err.Error())
		}
		return
	}
	defer conn.Close()
	for i, it := range list {
		if ctx.Err() != nil {
			return
		}
		sm, err := Sign(s.o.Identity, Message{
			Type: Type(it.Type), ID: it.MsgID, From: s.o.Identity.AID(), To: it.Peer, Sent: s.o.Now(),
			Interaction: it.Interaction, Text: it.Text, Code: reasons.Code(it.Code), Until: it.Until, ReplyPort: s.replyPort(it.Type),
		})
		if err != nil {
			s.fail(rctx, it, string(CodeMalformed), err.Error())
			continue
		}
		ack, err := conn.Send(sm)
		if err != nil {
			// The connection is gone; the rest are tried again later (the receiver
			// de-duplicates if this one arrived after all).
			for _, rest := range list[i:] {
				s.retry(rctx, rest, err.Error())
			}
			return
		}
		switch {
		case ack.Delivered():
			if err := s.o.Store.Delivered(rctx, s.o.Identity, it, sm.Raw(), sm.ContentDigest(), sm.Digest()); err != nil {
				// Not recorded: try again later (the peer will answer duplicate) instead
				// of spinning on a row that stays due.
				s.o.Log.Error("outbox delivered", "msg_id", it.MsgID, "err", err)
				s.retry(rctx, it, "record delivery: "+err.Error())
				continue
			}
			s.o.Log.Info("peer message delivered", "peer", peer, "type", it.Type, "interaction", it.Interaction, "msg_id", it.MsgID, "ack", ack.Status)
		case Transient(ack.Code):
			s.retry(rctx, it, ack.Err().Error())
		default:
			s.fail(rctx, it, string(ack.Code), ack.Err().Error())
		}
	}
}

func (s *Service) replyPort(typ string) int {
	if typ != string(TypeTask) {
		return 0
	}
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

func (s *Service) retry(ctx context.Context, it store.OutboxItem, why string) {
	next := s.o.Now().Add(s.o.Backoff.Delay(it.Attempts + 1))
	if err := s.o.Store.RetryLater(ctx, it.ID, next, why); err != nil && !errors.Is(err, context.Canceled) {
		s.o.Log.Error("outbox retry", "msg_id", it.MsgID, "err", err)
	}
	s.o.Log.Info("peer delivery deferred", "peer", it.Peer, "msg_id", it.MsgID, "attempt", it.Attempts+1, "next", next, "err", why)
}

func (s *Service) fail(ctx context.Context, it store.OutboxItem, code, why string) {
	s.o.Log.Warn("peer delivery failed", "peer", it.Peer, "msg_id", it.MsgID, "code", code, "err", why)
	if err := s.o.Store.DeliveryFailed(ctx, s.o.Identity, it, code, why); err != nil {
		s.o.Log.Error("outbox failed", "msg_id", it.MsgID, "err", err)
	}
}
