package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"anet.dev/anet/pkg/control"
)

// callTimeout bounds one read of the node for a page.
const callTimeout = 10 * time.Second

// call reads the node; a failure becomes the page's error.
func (s *Server) call(r *http.Request, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	return s.o.Node.Call(ctx, method, path, in, out)
}

// nodeFailed shows a failed control request: anetd's own code and message.
func (s *Server) nodeFailed(w http.ResponseWriter, what string, err error) {
	status := http.StatusBadGateway
	var re *control.RemoteError
	if errors.As(err, &re) && re.Status >= 400 && re.Status < 500 {
		status = re.Status
	}
	msg := err.Error()
	if re != nil && re.Code != "" {
		msg = string(re.Code) + ": " + re.Message
	}
	s.fail(w, status, "anetd refused", what+": "+msg)
}

// overviewData is the node at a glance.
type overviewData struct {
	Status control.Status
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request, sess *session) {
	var d overviewData
	if err := s.call(r, "GET", "/v1/status", nil, &d.Status); err != nil {
		s.nodeFailed(w, "status", err)
		return
	}
	s.render(w, http.StatusOK, "overview", "Node", "node", sess, d)
}

// interactionsData lists the tasks in and out, newest first.
type interactionsData struct {
	In, Out []control.Interaction
}

func (s *Server) interactions(w http.ResponseWriter, r *http.Request, sess *session) {
	var d interactionsData
	if err := s.call(r, "GET", "/v1/inbox", nil, &d.In); err != nil {
		s.nodeFailed(w, "inbox", err)
		return
	}
	if err := s.call(r, "GET", "/v1/sent", nil, &d.Out); err != nil {
		s.nodeFailed(w, "sent tasks", err)
		return
	}
	slices.Reverse(d.In)
	slices.Reverse(d.Out)
	s.render(w, http.StatusOK, "interactions", "Interactions", "interactions", sess, d)
}

// interactionData is one interaction id: the task in each direction that used it, with
// its answer, deliveries, runs and run logs.
type interactionData struct {
	ID    string
	Items []interactionView
	// TrustedMode is auto_reply.trusted: what trusting a peer makes of its next task.
	TrustedMode string
}

type interactionView struct {
	control.Interaction
}

func (s *Server) interaction(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	var items []control.Interaction
	if err := s.call(r, "GET", "/v1/interactions/"+url.PathEscape(id), nil, &items); err != nil {
		s.nodeFailed(w, "interaction", err)
		return
	}
	d := interactionData{ID: id}
	for _, it := range items {
		d.Items = append(d.Items, interactionView{Interaction: it})
	}
	var st control.Status
	if err := s.call(r, "GET", "/v1/status", nil, &st); err == nil {
		d.TrustedMode = st.AutoReply.Trusted
	}
	s.render(w, http.StatusOK, "interaction", "Interaction "+id, "interactions", sess, d)
}

// runs is the live page: its script fills the table from /events/runs.
func (s *Server) runs(w http.ResponseWriter, r *http.Request, sess *session) {
	s.render(w, http.StatusOK, "runs", "Runs", "runs", sess, nil)
}

// Days of spend the spend page shows.
const spendDays = 30

// spendData is the day's budget and the last days' spend, drawn.
type spendData struct {
	Budget control.Budget
	Days   int
	Total  chart
	Peers  []chart
}

func (s *Server) spend(w http.ResponseWriter, r *http.Request, sess *session) {
	var st control.Status
	if err := s.call(r, "GET", "/v1/status", nil, &st); err != nil {
		s.nodeFailed(w, "status", err)
		return
	}
	var h control.SpendHistory
	if err := s.call(r, "GET", "/v1/spend/history?days="+strconv.Itoa(spendDays), nil, &h); err != nil {
		s.nodeFailed(w, "spend history", err)
		return
	}
	d := spendData{Budget: st.Budget, Days: len(h.Days)}
	d.Total, d.Peers = spendCharts(h)
	s.render(w, http.StatusOK, "spend", "Spend", "spend", sess, d)
}

// Entries per page of the evidence timeline.
const evidencePage = 50

// evidenceData is one page of the chain, newest first, and a verification's outcome.
type evidenceData struct {
	Entries []entryView
	// Older is the sequence number to ask for the page before this one (0: this is the
	// first entry's page).
	Older  int64
	Before int64
	Verify *control.VerifyAnswer
}

type entryView struct {
	control.EvidenceEntry
	Fields []Field
}

func (s *Server) evidence(w http.ResponseWriter, r *http.Request, sess *session) {
	s.evidencePage(w, r, sess, nil)
}

func (s *Server) evidencePage(w http.ResponseWriter, r *http.Request, sess *session, verify *control.VerifyAnswer) {
	var before int64
	if b := r.URL.Query().Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			s.fail(w, http.StatusBadRequest, "Bad page", "before: want a sequence number")
			return
		}
		before = n
	}
	q := url.Values{"limit": {strconv.Itoa(evidencePage)}, "newest": {"true"}}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	var entries []control.EvidenceEntry
	if err := s.call(r, "GET", "/v1/evidence?"+q.Encode(), nil, &entries); err != nil {
		s.nodeFailed(w, "evidence", err)
		return
	}
	d := evidenceData{Before: before, Verify: verify}
	for i := len(entries) - 1; i >= 0; i-- {
		d.Entries = append(d.Entries, entryView{EvidenceEntry: entries[i], Fields: fieldsOf(entries[i].Details)})
	}
	if len(entries) == evidencePage && entries[0].Seq > 1 {
		d.Older = entries[0].Seq
	}
	s.render(w, http.StatusOK, "evidence", "Evidence", "evidence", sess, d)
}
