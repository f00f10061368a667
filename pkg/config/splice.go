package config

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// splice edits the operator's text in place so that everything but the changed value stays
// byte-identical. It handles the common layouts (a one-line value, an empty value, a block
// list of one-line items, a missing key in a block mapping, an empty or comment-only file) and
// returns nil for anything else; edit checks every result against the re-encoded tree.
func splice(src []byte, root *yaml.Node, path []string, val *yaml.Node, step int) []byte {
	t := newText(src)
	if root == nil {
		for _, l := range t.lines() {
			if s := strings.TrimSpace(string(l)); s != "" && !strings.HasPrefix(s, "#") {
				return nil // a document such as "~" or "---" with content
			}
		}
		return t.insertAfter(len(t.starts), newLines(path, 0, step, val))
	}
	m := root
	for i, seg := range path {
		if m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 {
			return nil
		}
		k, v := find(m, seg)
		if k == nil {
			first := m.Content[0]
			if !t.startsLine(first) {
				return nil
			}
			return t.insertAfter(lastLine(m), newLines(path[i:], first.Column-1, step, val))
		}
		if i == len(path)-1 {
			return t.replaceValue(k, v, val)
		}
		switch {
		case v.Kind == yaml.MappingNode:
			m = v
		case isEmpty(v) && t.startsLine(k):
			return t.insertAfter(k.Line, newLines(path[i+1:], k.Column-1+step, step, val))
		default:
			return nil
		}
	}
	return nil
}

func find(m *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// isEmpty is a value left out entirely ("key:" with nothing after it).
func isEmpty(v *yaml.Node) bool {
	return v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" && v.Value == ""
}

func lastLine(n *yaml.Node) int {
	l := n.Line
	for _, c := range n.Content {
		l = max(l, lastLine(c))
	}
	return l
}

// inline renders a value for the end of a "key: " line; lists in flow style.
func inline(val *yaml.Node) (string, bool) {
	n := *val
	if n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	out, err := yaml.Marshal(&n)
	if err != nil {
		return "", false
	}
	s := strings.TrimSuffix(string(out), "\n")
	return s, !strings.Contains(s, "\n")
}

// newLines renders "a:\n  b:\n    key: value\n" for the missing tail of a key path.
func newLines(path []string, indent, step int, val *yaml.Node) []byte {
	v, ok := inline(val)
	if !ok {
		return nil
	}
	var b bytes.Buffer
	for i, seg := range path {
		b.WriteString(strings.Repeat(" ", indent+i*step) + seg + ":")
		if i == len(path)-1 {
			b.WriteString(" " + v)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

type text struct {
	src    []byte
	starts []int // byte offset of each line's start; line n is starts[n-1]
}

func newText(src []byte) text {
	t := text{src: src}
	if len(src) == 0 {
		return t
	}
	t.starts = append(t.starts, 0)
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			t.starts = append(t.starts, i+1)
		}
	}
	return t
}

func (t text) lines() [][]byte {
	out := make([][]byte, len(t.starts))
	for i := range t.starts {
		out[i] = t.line(i + 1)
	}
	return out
}

// line returns line n (1-based) without its line break.
func (t text) line(n int) []byte {
	end := len(t.src)
	if n < len(t.starts) {
		end = t.starts[n]
	}
	return bytes.TrimRight(t.src[t.starts[n-1]:end], "\r\n")
}

// offset converts yaml.v3's 1-based line and character column to a byte offset.
func (t text) offset(line, col int) int {
	if line < 1 || line > len(t.starts) {
		return -1
	}
	l := t.line(line)
	i := 0
	for c := 1; c < col; c++ {
		if i >= len(l) {
			return -1
		}
		_, w := utf8.DecodeRune(l[i:])
		i += w
	}
	return t.starts[line-1] + i
}

// startsLine reports whether node n is the first thing on its line (a block mapping key, not
// one that follows "- " or "{").
func (t text) startsLine(n *yaml.Node) bool {
	off := t.offset(n.Line, n.Column)
	return off >= 0 && strings.TrimLeft(string(t.src[t.starts[n.Line-1]:off]), " ") == ""
}

func (t text) insertAfter(line int, add []byte) []byte {
	if add == nil {
		return nil
	}
	at := len(t.src)
	if line < len(t.starts) {
		at = t.starts[line]
	}
	var b bytes.Buffer
	b.Write(t.src[:at])
	if at > 0 && t.src[at-1] != '\n' {
		b.WriteByte('\n')
	}
	b.Write(add)
	b.Write(t.src[at:])
	return b.Bytes()
}

func (t text) replace(from, to int, with string) []byte {
	var b bytes.Buffer
	b.Write(t.src[:from])
	b.WriteString(with)
	b.Write(t.src[to:])
	return b.Bytes()
}

func (t text) replaceValue(k, v, val *yaml.Node) []byte {
	if val.Kind == yaml.SequenceNode && v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
		return t.replaceBlockList(k, v, val)
	}
	s, ok := inline(val)
	if !ok {
		return nil
	}
	if isEmpty(v) && v.Line == k.Line {
		at := t.offset(v.Line, v.Column)
		if at < 0 {
			return nil
		}
		return t.replace(at, at, " "+s)
	}
	from := t.offset(v.Line, v.Column)
	if from < 0 {
		return nil
	}
	end := t.starts[v.Line-1] + len(t.line(v.Line))
	to := valueEnd(t.src[from:end], v)
	if to < 0 || !restIsComment(t.src[from+to:end]) {
		return nil
	}
	return t.replace(from, from+to, s)
}

// replaceBlockList rewrites the lines of a block list of one-line items with the new items at
// the same indentation, keeping comment lines that sat between the items. An empty new list
// becomes "key: []".
func (t text) replaceBlockList(k, v, val *yaml.Node) []byte {
	first, last := v.Content[0].Line, v.Content[len(v.Content)-1].Line
	for _, it := range v.Content {
		if it.Kind != yaml.ScalarNode || it.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return nil
		}
	}
	indent := strings.Repeat(" ", v.Column-1)
	var b bytes.Buffer
	for _, it := range val.Content {
		s, ok := inline(it)
		if !ok {
			return nil
		}
		b.WriteString(indent + "- " + s + "\n")
	}
	for n := first; n <= last; n++ {
		if l := strings.TrimSpace(string(t.line(n))); strings.HasPrefix(l, "#") {
			b.WriteString(string(t.line(n)) + "\n")
		}
	}
	from, to := t.starts[first-1], len(t.src)
	if last < len(t.starts) {
		to = t.starts[last]
	}
	out := text{src: t.replace(from, to, b.String())}
	if len(val.Content) > 0 {
		return out.src
	}
	// "key:" → "key: []" on the key's own line, which precedes the list.
	if k.Style != 0 || k.Line >= first {
		return nil
	}
	at := t.offset(k.Line, k.Column)
	if at < 0 {
		return nil
	}
	at += len(k.Value)
	for at < len(t.src) && t.src[at] == ' ' {
		at++
	}
	if at >= len(t.src) || t.src[at] != ':' {
		return nil
	}
	return out.replace(at+1, at+1, " []")
}

// valueEnd returns the length of the value's source text at the start of line, or -1 when
// the value does not end on this line or is written in a form this splice does not handle.
func valueEnd(line []byte, v *yaml.Node) int {
	switch {
	case v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle != 0:
		return flowEnd(line)
	case v.Kind != yaml.ScalarNode:
		return -1
	case v.Style == yaml.DoubleQuotedStyle:
		for i := 1; i < len(line); i++ {
			switch line[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
	case v.Style == yaml.SingleQuotedStyle:
		for i := 1; i < len(line); i++ {
			if line[i] == '\'' {
				if i+1 < len(line) && line[i+1] == '\'' {
					i++
					continue
				}
				return i + 1
			}
		}
	case v.Style == 0 && bytes.HasPrefix(line, []byte(v.Value)):
		return len(v.Value)
	}
	return -1
}

// flowEnd finds the "]" that closes a one-line flow list, skipping quoted items.
func flowEnd(line []byte) int {
	depth := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"':
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(line) && line[i] != '\''; i++ {
			}
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// restIsComment accepts what may follow a value on its line: blanks and a comment.
func restIsComment(rest []byte) bool {
	s := strings.TrimLeft(string(rest), " \t\r")
	return s == "" || (strings.HasPrefix(s, "#") && len(s) < len(rest))
}
