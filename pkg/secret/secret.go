// Package secret is the type that holds an operator's key in memory. It links nothing of the
// project, so that the model proxy can carry a key without linking the keys file's reader (and
// the configuration below it); its formatting methods never reveal the value.
package secret

import (
	"fmt"
	"io"
	"log/slog"
)

// Value holds a key. Its formatting methods never reveal the value, so a Value that reaches a
// log line, an error or a JSON document by mistake prints as a redaction.
type Value struct{ v string }

// New wraps v.
func New(v string) Value { return Value{v: v} }

// Reveal returns the value; call it only where the key is put on the wire upstream.
func (s Value) Reveal() string { return s.v }

// Empty reports whether no key is set.
func (s Value) Empty() bool { return s.v == "" }

func (s Value) String() string                { return "[redacted]" }
func (s Value) GoString() string              { return "secret.Value{[redacted]}" }
func (s Value) LogValue() slog.Value          { return slog.StringValue("[redacted]") }
func (s Value) MarshalJSON() ([]byte, error)  { return []byte(`"[redacted]"`), nil }
func (s Value) MarshalText() ([]byte, error)  { return []byte("[redacted]"), nil }
func (s Value) Format(f fmt.State, verb rune) { io.WriteString(f, "[redacted]") }
func (s Value) MarshalYAML() (any, error)     { return "[redacted]", nil }
