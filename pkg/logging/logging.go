// Package logging builds the node's structured loggers (log/slog, text to stderr, which
// journald collects). Secrets are redacted here, at the logger, rather than at each call: an
// attribute whose key names a credential never prints its value, whatever the caller passed.
package logging

import (
	"io"
	"log/slog"
	"strings"
)

// sensitive lists attribute keys (lower-case, compared after trimming a group prefix) whose
// values are never written.
var sensitive = []string{"token", "key", "api_key", "apikey", "authorization", "secret", "password", "placeholder", "x-api-key", "cookie"}

// New returns a text logger on w at level (a slog.Level, or a *slog.LevelVar that a reload
// changes), with redaction.
func New(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: Redact}))
}

// NewJSON returns a JSON-lines logger on w at level, with redaction. Helpers log this way on
// their stderr, which anetd reads and re-emits with the helper's name (see privsep).
func NewJSON(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: Redact}))
}

// NewJSONAsync is NewJSON whose lines are formatted and written off the caller's path (see
// Async); flush writes what is queued and must run before the process exits.
func NewJSONAsync(w io.Writer, level slog.Level) (log *slog.Logger, flush func()) {
	out := &batchWriter{w: w}
	a := NewAsync(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level, ReplaceAttr: Redact}))
	a.q.out = out // the lines of one batch go out in one write
	return slog.New(a), a.Flush
}

// Redact is a slog ReplaceAttr function that blanks sensitive attributes. It runs for every
// attribute of every line, so it compares without allocating.
func Redact(_ []string, a slog.Attr) slog.Attr {
	k := a.Key
	if !isASCII(k) {
		// Unicode case folding can change a key's length; fold it whole.
		k = strings.ToLower(k)
	}
	if len(k) == 0 || !sensitiveLast[lowerASCII(k[len(k)-1])] {
		// No sensitive key ends in this letter: most keys stop here, at one lookup.
		return a
	}
	for _, s := range sensitive {
		if sensitiveKey(k, s) {
			return slog.String(a.Key, "[redacted]")
		}
	}
	return a
}

// sensitiveLast marks the last letters of the sensitive keys. None of them has a Unicode
// fold partner outside ASCII (only k and s do), so the lookup is exact for folded keys too.
var sensitiveLast = func() (m [256]bool) {
	for _, s := range sensitive {
		m[s[len(s)-1]] = true
	}
	return m
}()

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// sensitiveKey reports whether key is s, or ends in "_"+s or "-"+s, ignoring ASCII case.
func sensitiveKey(key, s string) bool {
	if len(key) < len(s) || !strings.EqualFold(key[len(key)-len(s):], s) {
		return false
	}
	if len(key) == len(s) {
		return true
	}
	c := key[len(key)-len(s)-1]
	return c == '_' || c == '-'
}
