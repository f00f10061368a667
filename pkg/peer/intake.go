package peer

import (
	"context"
	"errors"
	"net"
	"strconv"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// intake stores messages for a Service: each accepted message is one transaction holding
// its row and its evidence entry.
type intake struct{ s *Service }

func (in intake) Accept(ctx context.Context, m SignedMessage, remote net.Addr) Ack {
	s := in.s
	rec := store.Incoming{
		Type: string(m.Type), MsgID: m.ID, Peer: m.From, Interaction: m.Interaction, Text: m.Text,
		Code: string(m.Code), Until: m.Until, Sent: m.Sent, ContentHash: m.ContentDigest(),
		Raw: m.Raw(), Digest: m.Digest(),
	}
	// Answers go back to the address the task came from, on the port the sender named:
	// never to a host the sender chose, so a task cannot aim this node at a third party.
	if ta, ok := remote.(*net.TCPAddr); ok && m.ReplyPort != 0 {
		rec.ReplyAddr = net.JoinHostPort(ta.IP.String(), strconv.Itoa(m.ReplyPort))
	}
	it, err := s.o.Store.Receive(ctx, s.o.Identity, rec)
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
	default:
		s.o.Log.Error("store peer message", "peer", m.From, "msg_id", m.ID, "err", err)
		return refused(m.ID, reasons.Internal, "")
	}
	s.o.Log.Info("peer message accepted", "peer", m.From, "type", m.Type, "interaction", m.Interaction, "msg_id", m.ID)
	if m.Type == TypeTask {
		s.toEngine(it)
	}
	return Ack{Status: StatusAccepted}
}
