// Package logging builds the node's structured loggers (log/slog, text to stderr, which
// journald collects). Secrets are redacted here, at the logger, rather than at each call, by
// what the value is: a secret type (one with a Reveal method, like secret.Value) or text that
// carries a model-service key is redacted under any key; text under a key that names a
// credential is redacted too. Numbers, booleans, durations and times are never secrets and
// always print: `refused_without_token=3` is a count, not a token.
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

// Redact is a slog ReplaceAttr function that blanks secret values. It runs for every
// attribute of every line (after LogValuer values are resolved), so the common case, a
// short string under an ordinary key, is decided without allocating.
func Redact(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		return a // a count or a flag, whatever its key says
	case slog.KindString:
		if carriesKey(a.Value.String()) || sensitiveName(a.Key) {
			return slog.String(a.Key, redacted)
		}
		return a
	case slog.KindAny:
		v := a.Value.Any()
		if _, ok := v.(interface{ Reveal() string }); ok {
			return slog.String(a.Key, redacted) // a secret type under any key
		}
		if sensitiveName(a.Key) {
			return slog.String(a.Key, redacted) // []byte, an error, a Stringer: printed as text
		}
		if e, ok := v.(error); ok && carriesKey(e.Error()) {
			return slog.String(a.Key, redacted)
		}
		if b, ok := v.([]byte); ok && carriesKey(string(b)) {
			return slog.String(a.Key, redacted)
		}
	}
	return a
}

const redacted = "[redacted]"

// keyPrefixes begin the secrets the node knows by their shape: the keys of the model services
// the keys file holds (anthropic: sk-ant-…, openai: sk-… and sk-proj-…) and the control
// token (pkg/control's TokenPrefix; this package imports nothing of the module, and a test
// pins the two alike). A custom service's key has no known shape, and is kept out of logs by
// its type (secret.Value).
var keyPrefixes = []string{"sk-", "anet-ctl-"}

// minKeyTail is how many key characters must follow a prefix: real keys carry dozens, while
// words such as "task-1" or "disk-full" contain "sk-" followed by a few.
const minKeyTail = 20

// carriesKey reports whether s holds a model-service key: a prefix at the start of a word
// followed by at least minKeyTail key characters (letters, digits, '-', '_').
func carriesKey(s string) bool {
	for _, p := range keyPrefixes {
		for off := 0; ; {
			i := strings.Index(s[off:], p)
			if i < 0 {
				break
			}
			i += off
			off = i + len(p)
			if i > 0 && isKeyChar(s[i-1]) {
				continue
			}
			n := 0
			for j := off; j < len(s) && isKeyChar(s[j]); j++ {
				n++
			}
			if n >= minKeyTail {
				return true
			}
		}
	}
	return false
}

func isKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// sensitiveName reports whether key names a credential (see sensitive).
func sensitiveName(key string) bool {
	k := key
	if !isASCII(k) {
		// Unicode case folding can change a key's length; fold it whole.
		k = strings.ToLower(k)
	}
	if len(k) == 0 || !sensitiveLast[lowerASCII(k[len(k)-1])] {
		// No sensitive key ends in this letter: most keys stop here, at one lookup.
		return false
	}
	for _, s := range sensitive {
		if sensitiveKey(k, s) {
			return true
		}
	}
	return false
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
