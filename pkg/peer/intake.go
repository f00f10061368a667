package peer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"anet.dev/anet/pkg/peer/admission"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// Quota is intake's storage limits (N1): bytes of unanswered tasks (text plus
// store.TaskOverhead each) per stranger and for all strangers, and the free-space floor.
type Quota struct {
	PerStranger int64
	Strangers   int64
	// DiskFreeMin: below it strangers' messages are refused with disk_low; known peers'
	// below half of it, trusted peers' below a quarter. What is left under that is the
	// evidence chain's reserve.
	DiskFreeMin int64
}

// diskFloor is the free space below which intake refuses a message from class.
func diskFloor(q Quota, c admission.Class) int64 {
	switch c {
	case admission.Trusted:
		return q.DiskFreeMin / 4
	case admission.Known:
		return q.DiskFreeMin / 2
	}
	return q.DiskFreeMin
}

// diskGaugeTTL is how long a free-space reading is reused: statfs is cheap, but a flood
// should not make one per message.
const diskGaugeTTL = time.Second

// diskGauge caches the free-space reading. mu guards the fields below it.
type diskGauge struct {
	read func() (int64, error)
	now  func() time.Time

	mu    sync.Mutex
	at    time.Time
	bytes int64
	err   error
}

func (g *diskGauge) free() (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := g.now(); g.at.IsZero() || now.Sub(g.at) >= diskGaugeTTL {
		g.bytes, g.err = g.read()
		g.at = now
	}
	return g.bytes, g.err
}

// intake stores messages for a Service: each accepted message is one transaction holding
// its row and its evidence entry.
type intake struct{ s *Service }

func (in intake) Accept(ctx context.Context, m SignedMessage, from Origin) Ack {
	s := in.s
	if ack, ok := s.checkDisk(m.ID, from.Class); !ok {
		return ack
	}
	rec := store.Incoming{
		Type: string(m.Type), MsgID: m.ID, Peer: m.From, Interaction: m.Interaction, Text: m.Text,
		Code: string(m.Code), Until: m.Until, Sent: m.Sent, ContentHash: m.ContentDigest(),
		Raw: m.Raw(), Digest: m.Digest(), Src: from.Source.String(),
	}
	// Answers go back to the address the task came from, on the port the sender named:
	// never to a host the sender chose, so a task cannot aim this node at a third party.
	if ta, ok := from.Addr.(*net.TCPAddr); ok && m.ReplyPort != 0 {
		rec.ReplyAddr = net.JoinHostPort(ta.IP.String(), strconv.Itoa(m.ReplyPort))
	}
	if from.Class == admission.Stranger {
		if m.Type == TypeTask {
			rec.Quota = &store.IntakeQuota{PerStranger: s.quota.PerStranger, Strangers: s.quota.Strangers}
		}
		// Strangers write one at a time: however many of them wait, a known or trusted
		// peer's message queues behind at most one of theirs for the database.
		select {
		case s.strangerLane <- struct{}{}:
			defer func() { <-s.strangerLane }()
		case <-ctx.Done():
			return refused(m.ID, CodeRateLimited, "the node is busy storing other strangers' messages")
		}
	}
	it, err := s.o.Store.Receive(ctx, s.o.Identity, rec)
	var qe *store.QuotaError
	switch {
	case err == nil:
	case errors.Is(err, store.ErrDuplicate):
		return Ack{Status: StatusDuplicate, Code: CodeDuplicate}
	case errors.Is(err, store.ErrIDReused):
		return refused(m.ID, CodeIDReused, "")
	case errors.Is(err, store.ErrInteractionReused):
		return refused(m.ID, CodeInteractionReused, "interaction "+m.Interaction)
	case errors.Is(err, store.ErrUnknownInteraction):
		return refused(m.ID, CodeUnknownInteraction, "interaction "+m.Interaction)
	case errors.Is(err, store.ErrAlreadyAnswered):
		return refused(m.ID, CodeAlreadyAnswered, "interaction "+m.Interaction)
	case errors.As(err, &qe) && errors.Is(err, store.ErrPeerQuota):
		return refused(m.ID, CodePeerQuota, fmt.Sprintf("your unanswered tasks here hold %d of %d bytes; this one needs %d", qe.Used, qe.Limit, qe.Charge))
	case errors.As(err, &qe):
		// Not the figures: they describe other peers' traffic.
		return refused(m.ID, CodeStrangersQuota, "")
	default:
		s.o.Log.Error("store peer message", "peer", m.From, "msg_id", m.ID, "err", err)
		return refused(m.ID, reasons.Internal, "")
	}
	s.o.Observer.IntakeAdmitted(from.Class.String())
	s.o.Log.Info("peer message accepted", "peer", m.From, "type", m.Type, "interaction", m.Interaction, "msg_id", m.ID)
	if m.Type == TypeTask {
		s.toEngine(it)
	}
	return Ack{Status: StatusAccepted}
}

// checkDisk refuses a message from class when free space is under its floor. A reading
// that fails refuses strangers (fail closed) but not the operator's peers; a platform that
// cannot tell has no guard.
func (s *Service) checkDisk(id string, class admission.Class) (Ack, bool) {
	floor := diskFloor(s.quota, class)
	if floor <= 0 {
		return Ack{}, true
	}
	free, err := s.disk.free()
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return Ack{}, true
	case err != nil && class == admission.Stranger:
		s.o.Log.Error("peer intake: free space", "err", err)
		return refused(id, reasons.DiskLow, ""), false
	case err != nil:
		return Ack{}, true
	case free < floor:
		// The peer learns that, not the figures; the operator sees them in `anet status`.
		return refused(id, reasons.DiskLow, ""), false
	}
	return Ack{}, true
}
