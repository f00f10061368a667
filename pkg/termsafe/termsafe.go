// Package termsafe renders text that a peer, an agent or the evidence chain controls, so that
// it reaches the operator's terminal as text and never as commands to the terminal (U1).
//
// A task, a reply, a refusal detail, an agent's stderr or an address can hold escape
// sequences (OSC 52 sets the clipboard, CSI 2J clears the screen, OSC 0 sets the window
// title), a carriage return that overwrites the start of a line, 8-bit controls that some
// terminals read as escape sequences, or bidi overrides that make text read differently
// from its bytes. Each of them is shown visibly instead: `\x1b`, `\r`, `\u009b`, `\u202e`.
// Bytes that are not UTF-8 are shown as `\xNN` too. Newline and tab stay in Text and Block
// (a reply has lines), and Block prefixes every line so that no line of a peer's text can
// pass for a line the CLI printed.
//
// Every command of the CLI that prints such text prints it through this package; JSON
// output keeps the exact text (JSON escapes it), see JSON.
package termsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s with every control character other than newline and tab, every 8-bit
// control, DEL, bidi control and invalid byte written visibly.
func Text(s string) string { return render(s, false, needsEscape) }

// Line is Text for a field that must stay on one line (an id, an address, a table cell):
// newline and tab are written visibly too.
func Line(s string) string { return render(s, true, needsEscape) }

// Page is Text for a web page (the dashboard): what Text writes visibly, and also every
// character a browser draws as nothing at all, which a terminal shows or which cannot move
// the cursor there: Unicode's format characters (category Cf: zero-width spaces and joiners,
// the byte order mark, the invisible tag characters that can smuggle text to a model), the
// Hangul fillers and the combining grapheme joiner. Text a peer wrote then reads on the page
// as it is in bytes, with nothing hidden in it. HTML escaping is the template's job: Page
// adds none.
func Page(s string) string { return render(s, false, pageEscape) }

// PageLine is Page for a field that must stay on one line (an id, a table cell).
func PageLine(s string) string { return render(s, true, pageEscape) }

// pageEscape reports whether r must not reach a web page as itself.
func pageEscape(r rune) bool {
	switch {
	case needsEscape(r):
		return true
	case r == 0x034f, r == 0x115f, r == 0x1160, r == 0x3164, r == 0xffa0: // CGJ, Hangul fillers
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// Block renders a multi-line field under a heading the CLI printed: every line of s,
// rendered as Text, starts with prefix, so that a line of the field cannot look like one of
// the CLI's own lines.
func Block(s, prefix string) string {
	return prefix + strings.ReplaceAll(Text(s), "\n", "\n"+prefix)
}

// needsEscape reports whether r must not reach a terminal as itself.
func needsEscape(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f: // ASCII controls and DEL
		return true
	case r >= 0x80 && r <= 0x9f: // 8-bit controls: 0x9b is CSI, 0x9d is OSC on terminals that honour 8-bit controls
		return true
	case r >= 0x202a && r <= 0x202e: // LRE RLE PDF LRO RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI RLI FSI PDI
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c: // LRM RLM ALM
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

func render(s string, oneLine bool, escape func(rune) bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || (escape(r) && (oneLine || (r != '\n' && r != '\t'))) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case (r == '\n' || r == '\t') && !oneLine:
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case escape(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r) // the tag characters: Go's long form, unambiguous
		case escape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// JSON writes v as indented JSON. encoding/json already escapes ASCII controls and the line
// separators; DEL, 8-bit controls and bidi controls it leaves raw, so they are written as \u
// escapes here. A JSON reader gets back exactly the original text.
func JSON(w io.Writer, v any) error { return writeJSON(w, v, "  ") }

// JSONLine writes v as one line of compact JSON and a newline (JSON Lines), escaped as JSON
// escapes: a reader of the lines gets back exactly the original text.
func JSONLine(w io.Writer, v any) error { return writeJSON(w, v, "") }

func writeJSON(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return err
	}
	out := buf.Bytes()
	// Outside strings a JSON document is ASCII (its newlines and indentation included), and
	// encoding/json has escaped every ASCII control inside strings; so every rune from DEL up
	// that needs escaping is inside a string, where \uXXXX means the same rune.
	var b bytes.Buffer
	b.Grow(len(out))
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRune(out[i:])
		if r >= 0x7f && r != utf8.RuneError && needsEscape(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.Write(out[i : i+n])
		}
		i += n
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Walk replaces every string reachable from v (a pointer) through struct fields, slices,
// arrays, maps and interfaces with render(string): Line or Text. A command that prints a
// whole document (status, doctor) renders it once, here, so a field added later is covered
// too.
func Walk(v any, render func(string) string) {
	walk(reflect.ValueOf(v), render)
}

func walk(v reflect.Value, render func(string) string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Interface {
			// The value inside an interface cannot be set in place: replace it whole.
			inner := v.Elem()
			cp := reflect.New(inner.Type()).Elem()
			cp.Set(inner)
			walk(cp, render)
			if v.CanSet() {
				v.Set(cp)
			}
			return
		}
		walk(v.Elem(), render)
	case reflect.String:
		if v.CanSet() {
			v.SetString(render(v.String()))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				walk(v.Field(i), render)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes are not text here (json.RawMessage is rendered where it is printed)
		}
		for i := 0; i < v.Len(); i++ {
			walk(v.Index(i), render)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		iter := v.MapRange()
		type kv struct{ k, v reflect.Value }
		var out []kv
		for iter.Next() {
			val := reflect.New(v.Type().Elem()).Elem()
			val.Set(iter.Value())
			walk(val, render)
			k := iter.Key()
			if k.Kind() == reflect.String {
				nk := reflect.New(k.Type()).Elem()
				nk.SetString(render(k.String()))
				v.SetMapIndex(k, reflect.Value{})
				out = append(out, kv{nk, val})
				continue
			}
			out = append(out, kv{k, val})
		}
		for _, e := range out {
			v.SetMapIndex(e.k, e.v)
		}
	}
}
