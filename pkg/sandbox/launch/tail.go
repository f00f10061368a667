package launch

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Tail passes writes through to its writer and keeps the last bytes: what a program said
// last on stderr or a console (bwrap's error message, QEMU's, a guest's), for the reason a
// run failed.
type Tail struct {
	w   io.Writer
	max int

	mu  sync.Mutex // guards buf
	buf []byte
}

// NewTail returns a Tail that keeps the last max bytes written and passes them on to w (nil:
// nowhere).
func NewTail(w io.Writer, max int) *Tail { return &Tail{w: w, max: max} }

// Write implements io.Writer.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	t.mu.Unlock()
	if t.w == nil {
		return len(p), nil
	}
	return t.w.Write(p)
}

// String is the kept tail.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.Clone(t.buf))
}

// LastLine is the last non-empty line of s (a program's last word); carriage returns (a
// serial console's) are dropped.
func LastLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r", ""))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
