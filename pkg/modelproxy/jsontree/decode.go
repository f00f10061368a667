package jsontree

import (
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// fastDepth bounds the nesting the fast parser follows; deeper bodies go to encoding/json,
// which has its own limit and names the error.
const fastDepth = 1000

// fastDecode parses body as exactly one JSON object into the tree encoding/json builds with
// UseNumber: map[string]any, []any, string, json.Number, bool and nil, the last of a
// duplicated key kept, invalid UTF-8 and lone surrogates read as U+FFFD. It does it in one
// pass without reflection. ok is false for anything it does not accept as a whole (bad
// syntax, another kind of value, data after the object, deep nesting): the caller then
// decodes with encoding/json, which decides and names the error. So the fast path can only
// ever agree with encoding/json, never accept what it refuses (a differential test holds it
// to that).
func fastDecode(body []byte) (Object, bool) {
	// The tree's strings are cut from one copy of the body: one allocation for them all, where
	// a string each cost one per key, per value and per number (a real request has hundreds).
	// The tree holds no byte of body itself, so the caller may reuse body.
	p := parser{b: body, s: string(body)}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	o, ok := p.object(0)
	if !ok {
		return nil, false
	}
	p.ws()
	return o, p.i == len(p.b)
}

type parser struct {
	b []byte
	// s, when set, is b as a string: a string without escapes, and a number, is cut from it
	// rather than copied out of b.
	s string
	i int
}

// text is b[i:j] as a string.
func (p *parser) text(i, j int) string {
	if p.s != "" {
		return p.s[i:j]
	}
	return string(p.b[i:j])
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, bool) {
	p.ws()
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		n, ok := p.number()
		return n, ok
	}
	return nil, false
}

func (p *parser) literal(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// object parses from '{'; the delimiter checks after each value also end a literal or a
// number that runs on ("truex", "01").
func (p *parser) object(depth int) (Object, bool) {
	if depth > fastDepth {
		return nil, false
	}
	p.i++ // '{'
	o := Object{}
	if p.closes('}') {
		return o, true
	}
	for {
		k, ok := p.key()
		if !ok {
			return nil, false
		}
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		o[k] = v // a duplicated key: the last is kept, as encoding/json keeps it
		if more, ok := p.sep('}'); !ok || !more {
			return o, ok
		}
	}
}

func (p *parser) array(depth int) ([]any, bool) {
	if depth > fastDepth {
		return nil, false
	}
	p.i++ // '['
	a := []any{}
	if p.closes(']') {
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := p.sep(']'); !ok || !more {
			return a, ok
		}
	}
}

// closes reads the closing byte of an empty object or array, if that is what comes.
func (p *parser) closes(closing byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == closing {
		p.i++
		return true
	}
	return false
}

// key reads a member's name and its colon.
func (p *parser) key() (string, bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	k, ok := p.str()
	if !ok {
		return "", false
	}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return "", false
	}
	p.i++
	return k, true
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? as a json.Number.
func (p *parser) number() (json.Number, bool) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		j := p.i
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
		}
		return p.i - j
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return "", false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	return json.Number(p.text(start, p.i)), true
}

// str reads a string from its opening quote, unescaped as encoding/json does.
func (p *parser) str() (string, bool) {
	start := p.i + 1
	j := start
	for j < len(p.b) {
		c := p.b[j]
		if c == '"' {
			p.i = j + 1
			return p.text(start, j), true
		}
		switch {
		case c < 0x20:
			return "", false
		case c == '\\':
			return p.strSlow(start, j)
		case c < utf8.RuneSelf:
			j++
		default:
			// Valid UTF-8 is kept as it is, so it too can be cut from s; an invalid byte
			// becomes U+FFFD, which needs a new string.
			r, size := utf8.DecodeRune(p.b[j:])
			if r == utf8.RuneError && size == 1 {
				return p.strSlow(start, j)
			}
			j += size
		}
	}
	return "", false
}

// strSlow finishes a string that has escapes or invalid UTF-8, from j on.
func (p *parser) strSlow(start, j int) (string, bool) {
	out := make([]byte, 0, j-start+16)
	out = append(out, p.b[start:j]...)
	for j < len(p.b) {
		c := p.b[j]
		switch {
		case c == '"':
			p.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c == '\\':
			j++
			if j >= len(p.b) {
				return "", false
			}
			switch p.b[j] {
			case '"', '\\', '/':
				out = append(out, p.b[j])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(p.b, j+1)
				if r < 0 {
					return "", false
				}
				j += 4
				if utf16.IsSurrogate(r) {
					// A pair only with a valid \u escape right after; anything else is
					// U+FFFD and what follows is read on its own.
					if r2 := hex4(p.b, j+3); j+2 < len(p.b) && p.b[j+1] == '\\' && p.b[j+2] == 'u' && r2 >= 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							j += 7
							continue
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", false
			}
			j++
		case c < utf8.RuneSelf:
			out = append(out, c)
			j++
		default:
			r, size := utf8.DecodeRune(p.b[j:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, p.b[j:j+size]...)
			}
			j += size
		}
	}
	return "", false
}

// hex4 reads four hex digits at b[i:]; -1 if there are not four.
func hex4(b []byte, i int) rune {
	if i < 0 || i+4 > len(b) {
		return -1
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// sep reads what follows a member or an element: ',' (more) or the closing byte.
func (p *parser) sep(closing byte) (more, ok bool) {
	p.ws()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return true, true
	case closing:
		p.i++
		return false, true
	}
	return false, false
}

// skip passes over one value, checking it exactly as value does, and builds nothing.
func (p *parser) skip(depth int) bool {
	p.ws()
	if p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '{' || c == '[':
		if depth+1 > fastDepth {
			return false
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		p.i++
		if p.closes(closing) {
			return true
		}
		for {
			if c == '{' {
				p.ws()
				if p.i >= len(p.b) || p.b[p.i] != '"' || !p.skipStr() {
					return false
				}
				p.ws()
				if p.i >= len(p.b) || p.b[p.i] != ':' {
					return false
				}
				p.i++
			}
			if !p.skip(depth + 1) {
				return false
			}
			more, ok := p.sep(closing)
			if !ok {
				return false
			}
			if !more {
				return true
			}
		}
	case c == '"':
		return p.skipStr()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		_, ok := p.number()
		return ok
	}
	return false
}

// skipStr passes over a string from its opening quote, checking it as str does.
func (p *parser) skipStr() bool {
	for j := p.i + 1; j < len(p.b); {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(p.b) {
				return false
			}
			switch p.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if hex4(p.b, j+2) < 0 {
					return false
				}
				j += 6
			default:
				return false
			}
		default:
			j++
		}
	}
	return false
}
