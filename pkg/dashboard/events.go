package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/termsafe"
)

// maxStreams bounds the live streams open at once, all sessions together.
const maxStreams = 16

// keepAlive is how long a stream stays silent before a comment line proves it open.
const keepAlive = 15 * time.Second

// RunsEvent is the data of one "runs" event on /events/runs: the runs in progress as status
// lists them, every string rendered by termsafe.PageLine, so the page's script only ever
// sets text (U1). Error says why the node could not be read, when it could not.
type RunsEvent struct {
	Runs  []control.ActiveRun `json:"runs"`
	Error string              `json:"error,omitempty"`
}

// runEvents streams the active runs as server-sent events: the node's status is read every
// Poll, and an event is sent when the runs change (and once at the start).
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request, sess *session) {
	if s.streams.Add(1) > maxStreams {
		s.streams.Add(-1)
		s.fail(w, http.StatusServiceUnavailable, "Too many live pages", "Close another live page of the dashboard and reload this one.")
		return
	}
	defer s.streams.Add(-1)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	var last []byte
	var wrote time.Time
	for {
		if !s.auth.live(sess) {
			return
		}
		data := s.runsEvent(ctx)
		now := time.Now()
		var out []byte
		switch {
		case !bytes.Equal(data, last):
			out = fmt.Appendf(nil, "event: runs\ndata: %s\n\n", data)
			last = data
		case now.Sub(wrote) >= keepAlive:
			out = []byte(": open\n\n")
		}
		if out != nil {
			rc.SetWriteDeadline(now.Add(10 * time.Second))
			if _, err := w.Write(out); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			wrote = now
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// runsEvent is the event's JSON, on one line (JSON escapes every line break).
func (s *Server) runsEvent(ctx context.Context) []byte {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var st control.Status
	ev := RunsEvent{Runs: []control.ActiveRun{}}
	if err := s.o.Node.Call(cctx, "GET", "/v1/status", nil, &st); err != nil {
		ev.Error = err.Error()
	} else if st.AutoReply.Active != nil {
		ev.Runs = st.AutoReply.Active
	}
	termsafe.Walk(&ev, termsafe.PageLine)
	b, _ := json.Marshal(ev)
	return b
}
