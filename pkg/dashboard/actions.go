package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	"anet.dev/anet/pkg/control"
)

// confirmData is the confirmation page of an action: what will happen, and the form that
// makes it happen (the same fields again, with confirm=yes).
type confirmData struct {
	Action      string // trust or reply
	PostTo      string
	AID         string
	Interaction string
	Peer        string
	Text        string
	TrustedMode string
	Back        string
}

// confirmed reports a second POST, the one made from the confirmation page.
func confirmed(r *http.Request) bool { return r.PostForm.Get("confirm") == "yes" }

// trust adds a peer to the trust list, after a confirmation that says what that means.
func (s *Server) trust(w http.ResponseWriter, r *http.Request, sess *session) {
	aid := strings.TrimSpace(r.PostForm.Get("aid"))
	back := localBack(r.PostForm.Get("back"))
	if !confirmed(r) {
		var st control.Status
		if err := s.call(r, "GET", "/v1/status", nil, &st); err != nil {
			s.nodeFailed(w, "status", err)
			return
		}
		s.render(w, http.StatusOK, "confirm", "Trust a peer?", "interactions", sess,
			confirmData{Action: "trust", PostTo: "/trust", AID: aid, TrustedMode: st.AutoReply.Trusted, Back: back})
		return
	}
	if err := s.call(r, "POST", "/v1/trust", control.TrustRequest{AID: aid}, nil); err != nil {
		s.nodeFailed(w, "trust", err)
		return
	}
	s.log.Info("dashboard: peer trusted", "peer", aid)
	s.render(w, http.StatusOK, "message", "Peer trusted", "interactions", sess,
		message{Text: "Peer " + aid + " is on the trust list."})
}

// reply answers a task by hand, after a confirmation that shows the text and the peer.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	in := control.ReplyRequest{Interaction: id, Peer: strings.TrimSpace(r.PostForm.Get("peer")), Text: r.PostForm.Get("text")}
	if strings.TrimSpace(in.Text) == "" {
		s.fail(w, http.StatusBadRequest, "Nothing to send", "The reply is empty.")
		return
	}
	if !confirmed(r) {
		s.render(w, http.StatusOK, "confirm", "Send this reply?", "interactions", sess,
			confirmData{Action: "reply", PostTo: "/interactions/" + url.PathEscape(id) + "/reply", Interaction: id, Peer: in.Peer, Text: in.Text,
				Back: "/interactions/" + url.PathEscape(id)})
		return
	}
	if err := s.call(r, "POST", "/v1/reply", in, nil); err != nil {
		s.nodeFailed(w, "reply", err)
		return
	}
	s.log.Info("dashboard: reply sent", "peer", in.Peer, "interaction", id)
	s.render(w, http.StatusOK, "message", "Reply queued", "interactions", sess,
		message{Text: "The reply to " + id + " is queued for delivery; the interaction's page shows its delivery."})
}

// verify checks the whole chain and shows the outcome above the timeline.
func (s *Server) verify(w http.ResponseWriter, r *http.Request, sess *session) {
	var ans control.VerifyAnswer
	if err := s.call(r, "POST", "/v1/evidence/verify", struct{}{}, &ans); err != nil {
		s.nodeFailed(w, "verify", err)
		return
	}
	s.evidencePage(w, r, sess, &ans)
}

// localBack keeps a "back" link on the dashboard's own interaction pages.
func localBack(p string) string {
	if rest, ok := strings.CutPrefix(p, "/interactions/"); ok && rest != "" && !strings.ContainsAny(rest, "/\\?#:") {
		return p
	}
	return "/interactions"
}
