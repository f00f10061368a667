package sandbox

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Capped keeps at most a fixed number of the bytes written to it: the first ones (a run's
// answer, which the wire bounds) or the last ones (what a program said last on stderr or a
// console, for the reason a run failed). It passes every write on to its writer, if any, and
// reports every write as complete, so the writer is never stopped by the cap. It is the one
// capped buffer of the launcher and its backends.
type Capped struct {
	to   io.Writer
	max  int
	tail bool

	mu sync.Mutex // a run's streams are written from goroutines of their own
	b  []byte
}

// NewHead returns a Capped that keeps the first max bytes written.
func NewHead(max int) *Capped { return &Capped{max: max} }

// NewTail returns a Capped that keeps the last max bytes written and passes every write on
// to to (nil: nowhere).
func NewTail(to io.Writer, max int) *Capped { return &Capped{to: to, max: max, tail: true} }

// Write implements io.Writer. The kept bytes are recorded before the write is passed on; an
// error of the writer passed to is returned, the cap itself never fails.
func (c *Capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	switch {
	case c.tail:
		c.b = append(c.b, p...)
		if len(c.b) > c.max {
			c.b = c.b[len(c.b)-c.max:]
		}
	case len(c.b) < c.max:
		c.b = append(c.b, p[:min(c.max-len(c.b), len(p))]...)
	}
	c.mu.Unlock()
	if c.to == nil {
		return len(p), nil
	}
	return c.to.Write(p)
}

// Bytes is a copy of the kept bytes.
func (c *Capped) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.b)
}

// String is the kept bytes as a string.
func (c *Capped) String() string { return string(c.Bytes()) }

// LastLine is the last non-empty line of s (a program's last word, kept by a tail Capped);
// carriage returns (a serial console's) are dropped.
func LastLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r", ""))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
