// Package keys reads the operator's model-service keys file. Only anet-egress may import it:
// anetd must never hold a key's value (docs/architecture.md rule 1), and a dependency test checks that
// the anetd binary does not link this package.
//
// The file is YAML mapping provider names to keys:
//
//	anthropic: sk-ant-...
//	openai: sk-...
//	custom: ...        # the api_base service used by opencode, hermes and openclaw
//
// It must be a regular file owned by the current user and not accessible by group or others
// (like ssh's private keys); anything else is refused before a byte is read.
package keys

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"
)

// Providers the node knows. "custom" is the key for the configured api_base.
var Providers = []string{"anthropic", "openai", "custom"}

// maxFileSize bounds what we read: a keys file is a few hundred bytes.
const maxFileSize = 64 << 10

// Secret holds a key. Its formatting methods never reveal the value, so a Secret that reaches
// a log line, an error or a JSON document by mistake prints as a redaction.
type Secret struct{ v string }

// NewSecret wraps v.
func NewSecret(v string) Secret { return Secret{v: v} }

// Reveal returns the value; call it only where the key is put on the wire upstream.
func (s Secret) Reveal() string { return s.v }

// Empty reports whether no key is set.
func (s Secret) Empty() bool { return s.v == "" }

func (s Secret) String() string                { return "[redacted]" }
func (s Secret) GoString() string              { return "keys.Secret{[redacted]}" }
func (s Secret) LogValue() slog.Value          { return slog.StringValue("[redacted]") }
func (s Secret) MarshalJSON() ([]byte, error)  { return []byte(`"[redacted]"`), nil }
func (s Secret) MarshalText() ([]byte, error)  { return []byte("[redacted]"), nil }
func (s Secret) Format(f fmt.State, verb rune) { io.WriteString(f, "[redacted]") }
func (s Secret) MarshalYAML() (any, error)     { return "[redacted]", nil }

// Keys is the loaded keys file.
type Keys struct{ m map[string]Secret }

// Get returns the key for provider.
func (k Keys) Get(provider string) (Secret, bool) {
	s, ok := k.m[provider]
	return s, ok && !s.Empty()
}

// Configured lists the providers that have a key, sorted. This is all anetd ever learns.
func (k Keys) Configured() []string {
	out := []string{}
	for p, s := range k.m {
		if !s.Empty() {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// ErrPermissions is returned for a keys file that others could read.
var ErrPermissions = errors.New("keys file permissions")

// Load reads path. A missing file is not an error: the node then has no keys and reports
// no_api_key where one is needed.
func Load(path string) (Keys, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return Keys{m: map[string]Secret{}}, nil
	}
	if err != nil {
		return Keys{}, fmt.Errorf("open keys file %s: %w", path, err)
	}
	defer f.Close()
	if err := CheckFile(f, path); err != nil {
		return Keys{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return Keys{}, fmt.Errorf("read keys file %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return Keys{}, fmt.Errorf("keys file %s: larger than %d bytes", path, maxFileSize)
	}
	return parse(path, data)
}

// CheckFile refuses a keys file that is not a regular file owned by us with mode 0600 or
// stricter. It looks only at the metadata of the open file.
func CheckFile(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat keys file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("keys file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: keys file %s is accessible by group or others (mode %04o); run chmod 600 %s", ErrPermissions, path, perm, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%w: keys file %s is owned by uid %d, not by the node's user (uid %d)", ErrPermissions, path, st.Uid, os.Getuid())
	}
	return nil
}

func parse(path string, data []byte) (Keys, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Keys{m: map[string]Secret{}}, nil
		}
		// yaml errors quote the offending text, which could be part of a key: keep only
		// the line number.
		return Keys{}, fmt.Errorf("keys file %s: not valid YAML%s", path, yamlLine(err))
	}
	if len(doc.Content) == 0 {
		return Keys{m: map[string]Secret{}}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return Keys{}, fmt.Errorf("keys file %s:%d: must be a mapping of provider: key", path, root.Line)
	}
	m := map[string]Secret{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		known := false
		for _, p := range Providers {
			known = known || p == k.Value
		}
		if !known {
			// The name is not echoed: a key pasted where a provider name belongs would
			// otherwise land in the error, and from there in a log.
			return Keys{}, fmt.Errorf("keys file %s:%d: unknown provider name (known: %s)", path, k.Line, strings.Join(Providers, ", "))
		}
		if _, dup := m[k.Value]; dup {
			return Keys{}, fmt.Errorf("keys file %s:%d: provider %q appears twice", path, k.Line, k.Value)
		}
		if v.Kind != yaml.ScalarNode {
			return Keys{}, fmt.Errorf("keys file %s:%d: %s: the key must be a string", path, v.Line, k.Value)
		}
		val := strings.TrimSpace(v.Value)
		if strings.ContainsAny(val, "\r\n\t ") {
			return Keys{}, fmt.Errorf("keys file %s:%d: %s: the key contains white space", path, v.Line, k.Value)
		}
		m[k.Value] = NewSecret(val)
	}
	return Keys{m: m}, nil
}

func yamlLine(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		j := i + 5
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		return " at " + msg[i:j]
	}
	return ""
}
