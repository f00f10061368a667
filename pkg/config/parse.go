package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"anet.dev/anet/pkg/reasons"
)

// maxFileSize bounds what Load reads; a real configuration is a few hundred bytes.
const maxFileSize = 1 << 20

// Error is one problem in a configuration: where it is and what is allowed.
type Error struct {
	File string // as given to Parse; "" from Validate
	Line int    // 1-based; 0 when the key is not in the file
	Key  string // dotted key path; "" for a problem with the document as a whole
	Msg  string
	// Code is the rule's reason code when the rule has its own (api_base, egress_allow);
	// "" is config_invalid.
	Code reasons.Code
	bare bool   // Msg already names the key (unknown keys)
	at   string // key whose line locates the error when it is not Key (a list item)
}

func (e *Error) lineKey() string {
	if e.at != "" {
		return e.at
	}
	return e.Key
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	}
	if e.Key != "" && !e.bare {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads the configuration file at path. A missing file is not an error: the node runs
// on the defaults. See LoadFile.
func Load(path string) (Config, error) { return LoadFile(path, false) }

// LoadFile reads the configuration file at path under the file's own rules, the same for
// every program that reads it: a path the operator named explicitly (--config) must exist;
// the file must not be writable by other users (CheckFileInfo); then it is parsed and
// validated. Without explicit, a missing file means the defaults.
func LoadFile(path string, explicit bool) (Config, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if explicit {
			return Config{}, missingError(path)
		}
		return Default(), nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Config{}, fmt.Errorf("load config %s: %w", path, err)
	}
	if err := CheckFileInfo(path, fi); err != nil {
		return Config{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return Config{}, fmt.Errorf("load config %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return Config{}, fmt.Errorf("load config %s: larger than %d bytes", path, maxFileSize)
	}
	return Parse(path, data)
}

// RequireFile refuses an explicitly named config file that does not exist (`anet --config
// FILE config set` included): a typo in the path must not run the node on the defaults, or
// write a new file somewhere unexpected.
func RequireFile(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return missingError(path)
	}
	return nil
}

func missingError(path string) error {
	return &PermError{Code: ConfigMissing, Path: path,
		Msg: fmt.Sprintf("config file %s does not exist (a file named with --config must exist; without --config a missing default file means the defaults)", path)}
}

// CheckFileInfo is the config file's own rule: it decides where a key is sent (api_base) and
// which hosts sandboxed runs reach (egress_allow), so, like the keys file, it must be a
// regular file that no other user can change: owned by the current user (or root, for a
// file under /etc) and not writable by group or others.
func CheckFileInfo(path string, fi fs.FileInfo) error {
	bad := func(msg, fix string) error {
		return &PermError{Code: ConfigFileExposed, Path: path, Msg: "config file " + path + " " + msg, Fix: fix}
	}
	if !fi.Mode().IsRegular() {
		return bad(fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type()), "")
	}
	uid, err := fileOwner(fi)
	if err != nil {
		return fmt.Errorf("check config file %s: %w", path, err)
	}
	if uid != os.Getuid() && uid != 0 {
		return bad(fmt.Sprintf("is owned by uid %d, not by the current user (uid %d) or root", uid, os.Getuid()),
			fmt.Sprintf("chown %d %s", os.Getuid(), shellQuote(path)))
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return bad(fmt.Sprintf("is writable by other users (mode %04o); it decides where keys are sent and which hosts runs reach", perm),
			"chmod go-w "+shellQuote(path))
	}
	return nil
}

// Parse reads a configuration from data; name is used in error messages. Every problem is
// reported, each as an *Error, joined in file order.
func Parse(name string, data []byte) (Config, error) {
	c := Default()
	root, err := parseDocument(name, data)
	if err != nil {
		return Config{}, err
	}
	if root == nil {
		return c, nil
	}
	p := &parser{file: name, lines: map[string]int{}}
	p.section(&c, root, schema, nil)
	if len(p.errs) > 0 {
		return Config{}, errors.Join(p.errs...)
	}
	if errs := c.issues(); len(errs) > 0 {
		for _, e := range errs {
			e.File = name
			e.Line = p.lines[e.lineKey()]
		}
		return Config{}, joinErrors(errs)
	}
	return c, nil
}

// parseDocument returns the root mapping, or nil for a file with no content.
func parseDocument(name string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(name, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: name, Line: extra.Line, Msg: "a second YAML document; the file must hold exactly one"}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(name, data, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: root.Line,
			Msg: fmt.Sprintf("the file must be a mapping of keys (known: %s), got %s", schema.known(), describe(root))}
	}
	return root, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError rewrites yaml.v3's "yaml: line N: msg" into the file:line form. yaml.v3 gives
// no line for some errors (an unterminated quote at the end of the file, a byte YAML does
// not allow); the line is then that of the first such byte, or the last line, where the
// parser ran out of input.
func syntaxError(name string, data []byte, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: name, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return &Error{File: name, Line: badByteLine(data), Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

// badByteLine returns the 1-based line of the first byte that is not valid UTF-8 or is a
// control character YAML does not allow, else the last line.
func badByteLine(data []byte) int {
	line := 1
	for i := 0; i < len(data); {
		r, w := utf8.DecodeRune(data[i:])
		if (r == utf8.RuneError && w <= 1) || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f {
			return line
		}
		if r == '\n' && i+1 < len(data) {
			line++
		}
		i += w
	}
	return line
}

type parser struct {
	file  string
	lines map[string]int // key path (list items as key[i]) → line, for cross-field errors
	errs  []error
}

func (p *parser) fail(line int, path []string, msg string, bare bool) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Key: strings.Join(path, "."), Msg: msg, bare: bare})
}

func (p *parser) section(c *Config, m *yaml.Node, f *field, path []string) {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			p.fail(k.Line, path, fmt.Sprintf("keys must be plain names (known: %s), got %s", f.known(), describe(k)), false)
			continue
		}
		kpath := append(append([]string(nil), path...), k.Value)
		key := strings.Join(kpath, ".")
		if first, dup := seen[k.Value]; dup {
			p.fail(k.Line, kpath, fmt.Sprintf("duplicate key %q (first set on line %d)", key, first), true)
			continue
		}
		seen[k.Value] = k.Line
		child := f.child(k.Value)
		if child == nil {
			e := unknownKey(f, kpath).(*Error)
			e.File, e.Line = p.file, k.Line
			p.errs = append(p.errs, e)
			continue
		}
		p.lines[key] = k.Line
		if v.Kind == yaml.AliasNode || (child.children == nil && hasAlias(v)) {
			p.fail(v.Line, kpath, "aliases (*name) are not supported; write the value out", false)
			continue
		}
		if child.children != nil {
			switch {
			case v.Kind == yaml.MappingNode:
				p.section(c, v, child, kpath)
			case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
				// An empty section (all of its keys commented out) keeps the defaults.
			default:
				p.fail(v.Line, kpath, fmt.Sprintf("expected a mapping (known: %s), got %s", child.known(), describe(v)), false)
			}
			continue
		}
		if child.list && v.Kind == yaml.SequenceNode {
			for j, item := range v.Content {
				p.lines[fmt.Sprintf("%s[%d]", key, j)] = item.Line
			}
		}
		if err := child.decode(c, v); err != nil {
			line := v.Line
			var ie *itemError
			if errors.As(err, &ie) {
				line = ie.line
			}
			p.fail(line, kpath, err.Error(), false)
		}
	}
}

func hasAlias(n *yaml.Node) bool {
	for _, c := range n.Content {
		if c.Kind == yaml.AliasNode || hasAlias(c) {
			return true
		}
	}
	return false
}

// joinErrors returns the single error itself, so callers can use errors.As either way.
func joinErrors(errs []*Error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}
