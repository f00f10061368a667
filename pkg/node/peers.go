package node

import (
	"errors"
	"fmt"
	"net/http"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// startPeers opens the peer listener on the configured address (none when `listen` is
// empty) and starts the outbox delivery loop. A listener that cannot bind stops start-up:
// peers would otherwise be refused while the node looks healthy.
func (n *Node) startPeers() error {
	in := n.cfg.Intake
	svc, err := peer.New(peer.Options{Identity: n.id, Store: n.store, Engine: n.opts.Engine, Log: n.log, Observer: n.metrics,
		Quota: &peer.Quota{PerStranger: in.StrangerPendingMax, Strangers: in.StrangersPendingMax, DiskFreeMin: in.DiskFreeMin}})
	if err != nil {
		return err
	}
	n.peers = svc
	if listen := n.config().Listen; listen != "" {
		if _, err := svc.Listen(listen); err != nil {
			svc.Close()
			return err
		}
	}
	svc.Start()
	return nil
}

func (n *Node) listenAddr() string {
	if n.peers == nil {
		return ""
	}
	if a := n.peers.Addr(); a != nil {
		return a.String()
	}
	return ""
}

func (n *Node) peerRoutes(s *control.Server) {
	s.Handle("GET", "/v1/peers", n.listPeers)
	s.Handle("POST", "/v1/peers", n.addPeer)
	s.Handle("DELETE", "/v1/peers/{aid}", n.removePeer)
	s.Handle("GET", "/v1/trust", n.listTrust)
	s.Handle("POST", "/v1/trust", n.addTrust)
	s.Handle("DELETE", "/v1/trust/{aid}", n.removeTrust)
	s.Handle("POST", "/v1/send", n.send)
	s.Handle("GET", "/v1/inbox", n.inbox)
	s.Handle("GET", "/v1/sent", n.sent)
	s.Handle("GET", "/v1/interactions/{id}", n.showInteraction)
	s.Handle("POST", "/v1/reply", n.reply)
}

func checkAID(field, aid string) error {
	if err := identity.ValidAID(aid); err != nil {
		return control.BadRequestError("%s: %v", field, err)
	}
	return nil
}

func (n *Node) listPeers(r *http.Request) (any, error) {
	ps, err := n.store.Peers(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]control.Peer, 0, len(ps))
	for _, p := range ps {
		out = append(out, control.Peer{AID: p.AID, Addr: p.Addr, AddedAt: p.AddedAt, Trusted: p.Trusted})
	}
	return out, nil
}

func (n *Node) addPeer(r *http.Request) (any, error) {
	var in control.PeerRequest
	if err := decodeJSON(r, &in); err != nil {
		return nil, err
	}
	if err := checkAID("aid", in.AID); err != nil {
		return nil, err
	}
	if err := peer.ValidAddr(in.Addr); err != nil {
		return nil, err // bad_peer_addr, naming the field
	}
	if in.AID == n.id.AID() {
		return nil, control.BadRequestError("aid: %s is this node itself", in.AID)
	}
	if err := n.store.AddPeer(r.Context(), n.id, in.AID, in.Addr); err != nil {
		return nil, err
	}
	n.peers.PeersChanged()
	n.peers.Kick() // messages waiting for this peer's address can go now
	return control.Peer{AID: in.AID, Addr: in.Addr}, nil
}

func (n *Node) removePeer(r *http.Request) (any, error) {
	aid := r.PathValue("aid")
	if err := checkAID("aid", aid); err != nil {
		return nil, err
	}
	if err := n.store.RemovePeer(r.Context(), n.id, aid); errors.Is(err, store.ErrNotFound) {
		return nil, reasons.New(reasons.UnknownPeer, "peer "+aid)
	} else if err != nil {
		return nil, err
	}
	n.peers.PeersChanged()
	return map[string]string{"removed": aid}, nil
}

func (n *Node) listTrust(r *http.Request) (any, error) {
	ts, err := n.store.TrustList(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]control.TrustEntry, 0, len(ts))
	for _, t := range ts {
		out = append(out, control.TrustEntry{AID: t.AID, AddedAt: t.AddedAt})
	}
	return out, nil
}

func (n *Node) addTrust(r *http.Request) (any, error) {
	var in control.TrustRequest
	if err := decodeJSON(r, &in); err != nil {
		return nil, err
	}
	if err := checkAID("aid", in.AID); err != nil {
		return nil, err
	}
	if err := n.store.AddTrust(r.Context(), n.id, in.AID); err != nil {
		return nil, err
	}
	n.peers.PeersChanged()
	return control.TrustEntry{AID: in.AID}, nil
}

func (n *Node) removeTrust(r *http.Request) (any, error) {
	aid := r.PathValue("aid")
	if err := checkAID("aid", aid); err != nil {
		return nil, err
	}
	if err := n.store.RemoveTrust(r.Context(), n.id, aid); errors.Is(err, store.ErrNotFound) {
		return nil, reasons.New(reasons.UnknownPeer, "peer "+aid+" is not in the trust list")
	} else if err != nil {
		return nil, err
	}
	n.peers.PeersChanged()
	return map[string]string{"removed": aid}, nil
}

func (n *Node) send(r *http.Request) (any, error) {
	var in control.SendRequest
	if err := decodeJSON(r, &in); err != nil {
		return nil, err
	}
	if err := checkAID("to", in.To); err != nil {
		return nil, err
	}
	it, err := n.peers.Send(r.Context(), in.To, in.Text)
	if errors.Is(err, peer.ErrUnknownPeer) {
		return nil, reasons.New(reasons.UnknownPeer, "to: "+in.To)
	}
	if err != nil {
		return nil, callerError(err)
	}
	return n.toAPI(r, it), nil
}

// callerError turns the peer service's input errors into bad requests that keep their
// text (which names the field); a text over the limit and an unknown interaction keep their
// own codes.
func callerError(err error) error {
	var big *peer.TooLargeError
	var in *peer.InputError
	switch {
	case errors.As(err, &big):
		return reasons.New(reasons.MessageTooLarge, err.Error())
	case errors.Is(err, store.ErrUnknownInteraction):
		return reasons.New(reasons.UnknownInteraction, err.Error())
	case errors.As(err, &in):
		return control.BadRequestError("%v", err)
	}
	return err
}

func (n *Node) inbox(r *http.Request) (any, error) {
	state := r.URL.Query().Get("state")
	switch state {
	case "", store.StateNew, store.StateAnswered, store.StateRefused:
	default:
		return nil, control.BadRequestError("state: %q is not new, answered or refused", state)
	}
	list, err := n.store.Inbox(r.Context(), store.InboxOptions{State: state})
	if err != nil {
		return nil, err
	}
	return n.toAPIList(r, list), nil
}

// sent lists the tasks this node sent, oldest first (the dashboard's "out" list).
func (n *Node) sent(r *http.Request) (any, error) {
	state := r.URL.Query().Get("state")
	switch state {
	case "", store.StateWaiting, store.StateAnswered, store.StateRefused:
	default:
		return nil, control.BadRequestError("state: %q is not waiting, answered or refused", state)
	}
	list, err := n.store.Inbox(r.Context(), store.InboxOptions{State: state, Sent: true})
	if err != nil {
		return nil, err
	}
	return n.toAPIList(r, list), nil
}

func (n *Node) showInteraction(r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := peer.ValidID("interaction", id); err != nil {
		return nil, control.BadRequestError("%v", err)
	}
	list, err := n.store.Interactions(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, reasons.New(reasons.UnknownInteraction, "interaction "+id)
	}
	out := n.toAPIList(r, list)
	for i := range out {
		if out[i].Direction == "in" {
			// The runs and their logs are anet show's: a listing reads neither.
			out[i].Runs = n.runsOf(r.Context(), out[i].Peer, out[i].Interaction)
			out[i].RunLogs = readRunLogs(n.paths.RunLogs(), out[i].Peer, out[i].Interaction, n.log)
		}
	}
	return out, nil
}

func (n *Node) reply(r *http.Request) (any, error) {
	var in control.ReplyRequest
	if err := decodeJSON(r, &in); err != nil {
		return nil, err
	}
	if err := peer.ValidID("interaction", in.Interaction); err != nil {
		return nil, control.BadRequestError("%v", err)
	}
	p := in.Peer
	if p != "" {
		if err := checkAID("peer", p); err != nil {
			return nil, err
		}
	} else {
		list, err := n.store.Interactions(r.Context(), in.Interaction)
		if err != nil {
			return nil, err
		}
		var peers []string
		for _, it := range list {
			if it.Direction == "in" {
				peers = append(peers, it.Peer)
			}
		}
		switch len(peers) {
		case 0:
			return nil, reasons.New(reasons.UnknownInteraction, "interaction "+in.Interaction+" is not a task this node received")
		case 1:
			p = peers[0]
		default:
			return nil, control.BadRequestError("interaction: %s was used by %d peers; name one with --peer", in.Interaction, len(peers))
		}
	}
	it, err := n.peers.Answer(r.Context(), p, in.Interaction, in.Text)
	if err != nil {
		return nil, callerError(err)
	}
	return n.toAPI(r, it), nil
}

func (n *Node) toAPIList(r *http.Request, list []store.Interaction) []control.Interaction {
	out := make([]control.Interaction, 0, len(list))
	for _, it := range list {
		out = append(out, n.toAPI(r, it))
	}
	return out
}

func (n *Node) toAPI(r *http.Request, it store.Interaction) control.Interaction {
	trusted, err := n.store.Trusted(r.Context(), it.Peer)
	if err != nil {
		n.log.Warn("trust lookup", "err", fmt.Sprint(err))
	}
	out := control.Interaction{
		Interaction: it.ID, Peer: it.Peer, Direction: it.Direction, State: it.State, Text: it.Text,
		SentAt: it.SentAt, CreatedAt: it.CreatedAt, Trusted: trusted, Delivery: []control.Delivery{},
	}
	if it.AnswerType != "" {
		out.Answer = &control.Answer{Type: it.AnswerType, Text: it.AnswerText, Code: it.AnswerCode, Until: it.AnswerUntil, At: it.AnsweredAt}
		if it.Direction == "in" && it.AnswerType == "refusal" {
			out.Answer.Reason, out.Answer.Detail = n.refusalReason(r.Context(), it.Peer, it.ID)
		}
	}
	for _, d := range it.Delivery {
		out.Delivery = append(out.Delivery, control.Delivery{MsgID: d.MsgID, Type: d.Type, State: d.State, Attempts: d.Attempts, LastError: d.LastError, DoneAt: d.DoneAt})
	}
	return out
}
