package modelproxy

import (
	"net/http"
	"strings"
	"sync/atomic"

	"anet.dev/anet/pkg/modelproxy/metering"
)

// meterBody meters a successful answer's body; other answers are not billed and not read.
// The reader taps the agent's side of the proxy. A stream's pieces are read after the agent
// has each (the tap flushes first), so metering adds nothing to an event's delay; a JSON
// answer of known length is read as it passes and flushed whole once metered. Only a
// chat stream whose usage chunk must be taken out is read on the way, event by event.
func meterBody(resp *http.Response, st *reqState) {
	st.usage.SetStatus(resp.StatusCode)
	if resp.StatusCode/100 != 2 {
		return
	}
	sse := strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
	strip := sse && st.d.UsageAdded
	r := metering.NewReader(resp.Body, st.d.API, st.usage, sse, strip)
	st.reader = r
	if strip {
		resp.Body = r
		return
	}
	st.cw.tap, st.cw.stream = r.Feed, sse || resp.ContentLength < 0
}

// countingWriter is the agent's side of every answer. It takes the operator's key out of the
// headers and the body (E1), counts the bytes (into the run's total as they are written, so
// that Usage is current once the agent has the bytes) and keeps flushing reachable for SSE.
type countingWriter struct {
	http.ResponseWriter
	total  *atomic.Int64
	n      int64
	status int
	// tap, when set, reads what was written for usage (K1: metering). It reads
	// the agent's bytes, redacted: the same length as the upstream's, and the usage reader
	// never keeps a copy of the key.
	tap func([]byte)

	scrub *keyScrub
	// held is the end of what was written that may be the beginning of the key; it leaves
	// with the next write that shows it is not, or at end.
	held, buf []byte
	echoed    echo
	// stream: the answer is an event stream or of unknown length, so each piece is
	// flushed to the agent before tap reads it. A JSON answer of known length is flushed
	// whole once metered (see serve).
	stream bool
}

// WriteHeader sends the headers redacted; every header set leaves through here or through the
// first Write, the 1xx ones the ReverseProxy relays included.
func (c *countingWriter) WriteHeader(s int) {
	c.scrubHeader()
	if c.status == 0 && s >= 200 {
		c.status = s
	}
	c.ResponseWriter.WriteHeader(s)
}

func (c *countingWriter) scrubHeader() {
	c.found(c.scrub.header(c.ResponseWriter.Header()))
}

// found records the secrets an answer held, each once per answer.
func (c *countingWriter) found(what echo) {
	if what &^= c.echoed; what != 0 {
		c.echoed |= what
		c.scrub.echoed(what)
	}
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.scrubHeader()
		c.status = http.StatusOK
	}
	data, owned := b, false
	if len(c.held) > 0 {
		c.buf = append(append(c.buf[:0], c.held...), b...)
		c.held = c.held[:0]
		data, owned = c.buf, true
	}
	out, hold, found := c.scrub.body(data, owned, false, &c.buf)
	c.found(found)
	c.held = append(c.held, data[len(data)-hold:]...)
	if err := c.send(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// send writes redacted bytes to the agent, counts them and meters them.
func (c *countingWriter) send(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	c.total.Add(int64(n))
	if c.tap != nil {
		if c.stream {
			// An event reaches the agent before it is read for usage; the proxy's own
			// flush after this finds nothing.
			c.Flush()
		}
		c.tap(b[:n])
	}
	return err
}

// end is the answer's end (called again, it finds nothing to do): the bytes held back leave,
// redacted as they stand (they may hold a short pattern that waited on a longer one), and the
// trailers (in the header map by now) are redacted.
func (c *countingWriter) end() {
	if len(c.held) > 0 {
		held := c.held
		c.held = nil
		out, _, found := c.scrub.body(held, true, true, &held)
		c.found(found)
		c.send(out)
	}
	c.scrubHeader()
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
		return
	}
	http.NewResponseController(c.ResponseWriter).Flush()
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
