// Package httprecord is an http.ResponseWriter that keeps one answer in memory, bounded: for a
// handler called in the same process (the dashboard asking the control API's handlers, the
// openai back-end asking the model proxy), where the answer is read whole once the handler
// returns. It is the standard library's httptest.ResponseRecorder without its unbounded
// buffer and without linking a test package into a daemon.
package httprecord

import (
	"bytes"
	"fmt"
	"net/http"
)

// Recorder keeps the status, the header and at most Max bytes of the body. A write that would
// pass Max writes nothing, fails, and marks the answer Over.
type Recorder struct {
	max    int
	header http.Header
	status int
	body   bytes.Buffer
	over   bool
}

// New is a Recorder for an answer of at most max bytes.
func New(max int) *Recorder { return &Recorder{max: max, header: http.Header{}} }

// Header is the answer's header.
func (r *Recorder) Header() http.Header { return r.header }

// WriteHeader keeps the first status.
func (r *Recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

// Write appends p to the body, or fails when the body would pass its bound.
func (r *Recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.body.Len()+len(p) > r.max {
		r.over = true
		return 0, fmt.Errorf("answer larger than %d bytes", r.max)
	}
	return r.body.Write(p)
}

// Flush does nothing: the answer is read once the handler has returned (a streaming handler
// asks for an http.Flusher).
func (r *Recorder) Flush() {}

// Status is the answer's status: 200 when the handler set none.
func (r *Recorder) Status() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// Body is the body kept.
func (r *Recorder) Body() []byte { return r.body.Bytes() }

// Over says a write was refused for passing the bound: Body is not the whole answer.
func (r *Recorder) Over() bool { return r.over }
