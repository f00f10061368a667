package jsontree

import (
	"encoding/json"
	"unicode/utf8"
)

// Scanner reads one JSON text in place, a piece at a time, checking each piece exactly as
// Decode checks it, for a reader that builds only the little it needs (metering reads an
// answer's usage so, and skips its content). Every method passes over white space first. A
// false result means the text is not what the caller expected there, or not JSON; such a
// caller then leaves the text to encoding/json.
type Scanner struct{ p parser }

// NewScanner scans b; nothing it returns holds on to b but Key's name, as documented there.
func NewScanner(b []byte) *Scanner { return &Scanner{p: parser{b: b}} }

// Peek returns the next byte without reading it; 0 at the end.
func (s *Scanner) Peek() byte {
	s.p.ws()
	if s.p.i >= len(s.p.b) {
		return 0
	}
	return s.p.b[s.p.i]
}

// Open reads the '{' of an object at depth; false if that is not what comes, or if depth is
// deeper than Decode follows.
func (s *Scanner) Open(depth int) bool {
	if s.Peek() != '{' || depth > fastDepth {
		return false
	}
	s.p.i++
	return true
}

// Closes reads closing if it comes next: the end of an empty object or array.
func (s *Scanner) Closes(closing byte) bool { return s.p.closes(closing) }

// Key reads a member's name and its colon. The name's bytes are b's own, in place, unless
// the name has escapes or non-ASCII bytes, when it is decoded.
func (s *Scanner) Key() ([]byte, bool) { return s.p.rawKey() }

// Sep reads what follows a member or an element: ',' (more) or closing.
func (s *Scanner) Sep(closing byte) (more, ok bool) { return s.p.sep(closing) }

// Skip passes over one value nested at depth, and builds nothing.
func (s *Scanner) Skip(depth int) bool { return s.p.skip(depth) }

// Null reads the literal null.
func (s *Scanner) Null() bool {
	s.p.ws()
	return s.p.literal("null")
}

// Number reads a number.
func (s *Scanner) Number() (json.Number, bool) {
	s.p.ws()
	if s.p.i >= len(s.p.b) {
		return "", false
	}
	return s.p.number()
}

// End reports whether nothing but white space is left.
func (s *Scanner) End() bool {
	s.p.ws()
	return s.p.i == len(s.p.b)
}

// rawKey reads a member's name and its colon, as key does, but returns the name's bytes in
// place, without making a string of them; a name with escapes or non-ASCII bytes is decoded.
func (p *parser) rawKey() ([]byte, bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	j := start
	for j < len(p.b) && p.b[j] != '"' && p.b[j] != '\\' && p.b[j] >= 0x20 && p.b[j] < utf8.RuneSelf {
		j++
	}
	var k []byte
	if j < len(p.b) && p.b[j] == '"' {
		k, p.i = p.b[start:j], j+1
	} else {
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		k = []byte(s)
	}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return nil, false
	}
	p.i++
	return k, true
}
