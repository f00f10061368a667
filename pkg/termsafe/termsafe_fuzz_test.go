package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// unsafeRune is what must never reach a terminal as itself, worked out here from the
// standards rather than from needsEscape: ASCII controls 0x00–0x1f (but newline and tab
// where allowed), DEL, the 8-bit controls 0x80–0x9f, Unicode's Bidi_Control set (U+061C,
// U+200E/F, U+202A–202E, U+2066–2069) and the line and paragraph separators.
func unsafeRune(r rune, allowNLTab bool) bool {
	switch {
	case allowNLTab && (r == '\n' || r == '\t'):
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case unicode.Is(unicode.Bidi_Control, r), r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// firstUnsafe returns the first rune of s that is unsafe, or a byte that is not UTF-8, as
// text for a failure; "" when there is none.
func firstUnsafe(s string, allowNLTab bool) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return "invalid byte " + s[i:i+1]
		}
		if unsafeRune(r, allowNLTab) {
			return string(r)
		}
		i += n
	}
	return ""
}

// FuzzRender (U1): for any text,
//   - Text's output is valid UTF-8 and has no ESC, no ASCII control but newline and tab, no DEL,
//     no 8-bit control, no bidi control, no line or paragraph separator; Line's has no newline
//     or tab either; Block's lines each start with the prefix;
//   - text that has none of them is left as it is;
//   - rendering is idempotent (the package says plain text is untouched, and what it writes
//     is plain text): Text(Text(s)) = Text(s), Line(Line(s)) = Line(s), and Line(Text(s)) =
//     Line(s) (Text only keeps newline and tab, which Line then writes as Line would);
//   - JSON's output has no raw unsafe rune outside the indentation's newlines, and reads
//     back as the text (when the text is UTF-8: JSON cannot carry other bytes); JSONLine's is
//     one line with no raw unsafe rune, and reads back the same.
func FuzzRender(f *testing.F) {
	for _, s := range []string{osc52, clear, title, fake, c1CSI, c1OSC, del, rlo, allBidi,
		"\u200e\u200f\u061c\u2028\u2029", "\x00\x07\x08\x0b\x0c", "a\tb", "ok\xff\xc3(", "grüße, 你好 — ok", "",
		"hello\nstate: answered\r\nreply (now):\n" + clear, `\x1b literally`, "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80"} {
		f.Add(s, "  | ")
	}
	f.Fuzz(func(t *testing.T, s, prefix string) {
		text, line := Text(s), Line(s)
		if bad := firstUnsafe(text, true); bad != "" {
			t.Fatalf("Text(%q) = %q, which holds %q", s, text, bad)
		}
		if bad := firstUnsafe(line, false); bad != "" {
			t.Fatalf("Line(%q) = %q, which holds %q", s, line, bad)
		}
		if firstUnsafe(s, true) == "" && text != s {
			t.Fatalf("Text(%q) = %q, want it as it is", s, text)
		}
		if firstUnsafe(s, false) == "" && line != s {
			t.Fatalf("Line(%q) = %q, want it as it is", s, line)
		}
		if got := Text(text); got != text {
			t.Fatalf("Text(Text(%q)) = %q, want %q", s, got, text)
		}
		if got := Line(line); got != line {
			t.Fatalf("Line(Line(%q)) = %q, want %q", s, got, line)
		}
		if got := Line(text); got != line {
			t.Fatalf("Line(Text(%q)) = %q, want Line's %q", s, got, line)
		}

		if firstUnsafe(prefix, false) == "" {
			block := Block(s, prefix)
			if bad := firstUnsafe(block, true); bad != "" {
				t.Fatalf("Block(%q, %q) = %q, which holds %q", s, prefix, block, bad)
			}
			for i, l := range strings.Split(block, "\n") {
				if !strings.HasPrefix(l, prefix) {
					t.Fatalf("Block(%q, %q): line %d %q lacks the prefix", s, prefix, i, l)
				}
			}
		}

		var buf bytes.Buffer
		if err := JSON(&buf, map[string]string{"text": s}); err != nil {
			t.Fatalf("JSON(%q): %v", s, err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
			if bad := firstUnsafe(l, false); bad != "" {
				t.Fatalf("JSON(%q) = %q, which holds %q", s, buf.String(), bad)
			}
		}
		var back map[string]string
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatalf("JSON(%q) = %q does not parse: %v", s, buf.String(), err)
		}
		if utf8.ValidString(s) && back["text"] != s {
			t.Fatalf("JSON(%q) reads back as %q", s, back["text"])
		}

		buf.Reset()
		if err := JSONLine(&buf, map[string]string{"text": s}); err != nil {
			t.Fatalf("JSONLine(%q): %v", s, err)
		}
		line1, ok := strings.CutSuffix(buf.String(), "\n")
		if bad := firstUnsafe(line1, false); !ok || bad != "" {
			t.Fatalf("JSONLine(%q) = %q, want one line without %q", s, buf.String(), bad)
		}
		back = nil
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil || utf8.ValidString(s) && back["text"] != s {
			t.Fatalf("JSONLine(%q) = %q reads back as %q, %v", s, buf.String(), back["text"], err)
		}
	})
}

// invisibleRune is what a browser draws as nothing, from Unicode's tables rather than from
// pageEscape: the format characters (Cf), the Hangul fillers and the combining grapheme
// joiner.
func invisibleRune(r rune) bool {
	return unicode.Is(unicode.Cf, r) || r == 0x034f || r == 0x115f || r == 0x1160 || r == 0x3164 || r == 0xffa0
}

func firstUnsafeOnPage(s string, allowNLTab bool) string {
	if bad := firstUnsafe(s, allowNLTab); bad != "" {
		return bad
	}
	for _, r := range s {
		if invisibleRune(r) {
			return string(r)
		}
	}
	return ""
}

// FuzzPage (U1): for any text, Page's output is valid UTF-8 with none of what Text escapes
// and no character a browser draws as nothing; PageLine's has no newline or tab either;
// text with none of them is left as it is; both are idempotent; and Page never keeps what
// Text would escape.
func FuzzPage(f *testing.F) {
	for _, s := range []string{rlo, allBidi, osc52, "a\u200bb\ufeff", "ok\U000e0041", "\u3164", "a\n\tb", "grüße ❤️", "\xff", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		page, line := Page(s), PageLine(s)
		if bad := firstUnsafeOnPage(page, true); bad != "" {
			t.Fatalf("Page(%q) = %q, which holds %q", s, page, bad)
		}
		if bad := firstUnsafeOnPage(line, false); bad != "" {
			t.Fatalf("PageLine(%q) = %q, which holds %q", s, line, bad)
		}
		if firstUnsafeOnPage(s, true) == "" && page != s {
			t.Fatalf("Page(%q) = %q, want it as it is", s, page)
		}
		if firstUnsafeOnPage(s, false) == "" && line != s {
			t.Fatalf("PageLine(%q) = %q, want it as it is", s, line)
		}
		if Page(page) != page || PageLine(line) != line {
			t.Fatalf("Page or PageLine of %q is not idempotent: %q, %q", s, page, line)
		}
	})
}
