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
// It must be a regular file (not a symlink) owned by the current user and not accessible by
// group or others (like ssh's private keys); anything else is refused before a byte is read,
// by the rule in config.OpenKeysFile that every other program checks too.
package keys

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/secret"
)

// Providers the node knows. "custom" is the key for the configured api_base.
var Providers = []string{"anthropic", "openai", "custom"}

// maxFileSize bounds what we read: a keys file is a few hundred bytes.
const maxFileSize = 64 << 10

// Keys is the loaded keys file.
type Keys struct{ m map[string]secret.Value }

// Get returns the key for provider.
func (k Keys) Get(provider string) (secret.Value, bool) {
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

// Load reads path. A missing file is not an error: the node then has no keys and reports
// no_api_key where one is needed. The file is opened under the one keys-file rule that every
// other program checks too (config.OpenKeysFile), so what anetd --check, anet doctor and
// anet config set accept is exactly what is read here; refusals are *config.PermError with
// the rule's reason code.
func Load(path string) (Keys, error) {
	f, err := config.OpenKeysFile(path)
	if err != nil {
		return Keys{}, err
	}
	if f == nil {
		return Keys{m: map[string]secret.Value{}}, nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return Keys{}, fmt.Errorf("read keys file %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return Keys{}, invalid(path, fmt.Sprintf("is larger than %d bytes", maxFileSize))
	}
	return parse(path, data)
}

// invalid is a keys file that cannot be read as keys; msg never quotes the file's content.
func invalid(path, msg string) error {
	return &config.PermError{Code: config.KeysFileInvalid, Path: path, Msg: "keys file " + path + " " + msg}
}

func parse(path string, data []byte) (Keys, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Keys{m: map[string]secret.Value{}}, nil
		}
		// yaml errors quote the offending text, which could be part of a key: keep only
		// the line number.
		return Keys{}, invalid(path, "is not valid YAML"+yamlLine(err))
	}
	if len(doc.Content) == 0 {
		return Keys{m: map[string]secret.Value{}}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return Keys{}, invalid(path, fmt.Sprintf("line %d: must be a mapping of provider: key", root.Line))
	}
	m := map[string]secret.Value{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		known := false
		for _, p := range Providers {
			known = known || p == k.Value
		}
		if !known {
			// The name is not echoed: a key pasted where a provider name belongs would
			// otherwise land in the error, and from there in a log.
			return Keys{}, invalid(path, fmt.Sprintf("line %d: unknown provider name (known: %s)", k.Line, strings.Join(Providers, ", ")))
		}
		if _, dup := m[k.Value]; dup {
			return Keys{}, invalid(path, fmt.Sprintf("line %d: provider %q appears twice", k.Line, k.Value))
		}
		if v.Kind != yaml.ScalarNode {
			return Keys{}, invalid(path, fmt.Sprintf("line %d: %s: the key must be a string", v.Line, k.Value))
		}
		val := strings.TrimSpace(v.Value)
		if strings.ContainsAny(val, "\r\n\t ") {
			return Keys{}, invalid(path, fmt.Sprintf("line %d: %s: the key contains white space", v.Line, k.Value))
		}
		m[k.Value] = secret.New(val)
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
