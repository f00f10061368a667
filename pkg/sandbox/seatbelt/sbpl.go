package seatbelt

import (
	"fmt"
	"strings"
)

// The profile language (SBPL) is a Scheme dialect. parse reads the subset a profile is
// written in, strictly: lists, symbols, strings with \" and \\ escapes, regex literals
// #"…", and ; comments. Anything else, an unbalanced parenthesis, an unterminated string or a
// byte that is not printable ASCII is an error with its line.

type nodeKind int

const (
	nodeList nodeKind = iota
	nodeSymbol
	nodeString
	nodeRegex
)

// node is one datum of a profile.
type node struct {
	kind nodeKind
	text string // symbol name, string or regex contents
	kids []*node
	line int
}

func (n *node) isList() bool { return n.kind == nodeList }

// head is the symbol a list starts with, or "".
func (n *node) head() string {
	if n.kind != nodeList || len(n.kids) == 0 || n.kids[0].kind != nodeSymbol {
		return ""
	}
	return n.kids[0].text
}

// String renders n back in SBPL, for messages.
func (n *node) String() string {
	switch n.kind {
	case nodeSymbol:
		return n.text
	case nodeString:
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(n.text) + `"`
	case nodeRegex:
		return `#"` + n.text + `"`
	}
	parts := make([]string, len(n.kids))
	for i, k := range n.kids {
		parts[i] = k.String()
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// parse returns the top-level forms of src.
func parse(src string) ([]*node, error) {
	for i := 0; i < len(src); i++ {
		if c := src[i]; c >= 0x7f || c < 0x20 && c != '\n' && c != '\t' {
			return nil, fmt.Errorf("line %d: byte 0x%02x: a profile is printable ASCII only", 1+strings.Count(src[:i], "\n"), c)
		}
	}
	p := &parser{src: src, line: 1}
	var forms []*node
	for {
		p.skip()
		if p.pos >= len(p.src) {
			return forms, nil
		}
		n, err := p.datum()
		if err != nil {
			return nil, err
		}
		forms = append(forms, n)
	}
}

type parser struct {
	src  string
	pos  int
	line int
}

// skip passes over white space and comments.
func (p *parser) skip() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t':
			p.pos++
		case c == ';':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *parser) datum() (*node, error) {
	line := p.line
	switch c := p.src[p.pos]; {
	case c == '(':
		p.pos++
		n := &node{kind: nodeList, line: line}
		for {
			p.skip()
			if p.pos >= len(p.src) {
				return nil, fmt.Errorf("line %d: unbalanced: the list opened here is never closed", line)
			}
			if p.src[p.pos] == ')' {
				p.pos++
				return n, nil
			}
			k, err := p.datum()
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, k)
		}
	case c == ')':
		return nil, fmt.Errorf("line %d: unbalanced: ')' closes nothing", line)
	case c == '"':
		p.pos++
		s, err := p.stringBody(line)
		return &node{kind: nodeString, text: s, line: line}, err
	case c == '#' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '"':
		p.pos += 2
		s, err := p.regexBody(line)
		return &node{kind: nodeRegex, text: s, line: line}, err
	default:
		start := p.pos
		for p.pos < len(p.src) && !strings.ContainsRune(" \t\n();\"", rune(p.src[p.pos])) {
			p.pos++
		}
		return &node{kind: nodeSymbol, text: p.src[start:p.pos], line: line}, nil
	}
}

// stringBody reads a string after its opening quote; \" and \\ are the only escapes.
func (p *parser) stringBody(line int) (string, error) {
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		switch c {
		case '"':
			return b.String(), nil
		case '\n':
			return "", fmt.Errorf("line %d: a string may not span lines", line)
		case '\\':
			if p.pos >= len(p.src) || (p.src[p.pos] != '"' && p.src[p.pos] != '\\') {
				return "", fmt.Errorf(`line %d: only \" and \\ may be escaped in a string`, line)
			}
			b.WriteByte(p.src[p.pos])
			p.pos++
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("line %d: unterminated string", line)
}

// regexBody reads a regex literal after #"; it ends at the first quote not after a backslash.
func (p *parser) regexBody(line int) (string, error) {
	start := p.pos
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '\n':
			return "", fmt.Errorf("line %d: a regex may not span lines", line)
		case '\\':
			// An escaped newline would carry the regex onto the next line unseen, and the
			// lines of every later violation with it.
			if p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n' {
				return "", fmt.Errorf("line %d: a regex may not span lines", line)
			}
			p.pos += 2
			continue
		case '"':
			s := p.src[start:p.pos]
			p.pos++
			return s, nil
		}
		p.pos++
	}
	return "", fmt.Errorf("line %d: unterminated regex", line)
}
