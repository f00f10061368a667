package termsafe

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The sequences a hostile peer or agent would send to an operator's terminal (U1).
const (
	osc52   = "\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07" // set the clipboard
	clear   = "\x1b[2J"                            // clear the screen
	title   = "\x1b]0;pwned\x07"                   // set the window title
	fake    = "\r\nfake line"                      // overwrite, then forge a line
	c1CSI   = "\u009b31m"                          // 8-bit CSI: red text
	c1OSC   = "\u009d0;t\u009c"                    // 8-bit OSC ... ST
	del     = "a\x7fb"
	rlo     = "abc\u202edcba"
	allBidi = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)

// U1: each sequence is written visibly, byte for byte as asserted; plain text (also non-ASCII)
// is untouched.
func TestText(t *testing.T) {
	for _, tc := range []struct {
		name, in, text, line string
	}{
		{"OSC 52", osc52, `\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07`, `\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07`},
		{"CSI 2J", clear, `\x1b[2J`, `\x1b[2J`},
		{"OSC 0", title, `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		{"CR LF fake line", fake, "\\r\nfake line", `\r\nfake line`},
		{"8-bit CSI", c1CSI, `\u009b31m`, `\u009b31m`},
		{"8-bit OSC and ST", c1OSC, `\u009d0;t\u009c`, `\u009d0;t\u009c`},
		{"DEL", del, `a\x7fb`, `a\x7fb`},
		{"RLO", rlo, `abc\u202edcba`, `abc\u202edcba`},
		{"every bidi override and isolate", allBidi, `\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069`, `\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069`},
		{"marks and separators", "\u200e\u200f\u061c\u2028\u2029", `\u200e\u200f\u061c\u2028\u2029`, `\u200e\u200f\u061c\u2028\u2029`},
		{"NUL, BEL, BS, VT, FF", "\x00\x07\x08\x0b\x0c", `\x00\x07\x08\x0b\x0c`, `\x00\x07\x08\x0b\x0c`},
		{"tab kept in text", "a\tb", "a\tb", `a\tb`},
		{"invalid UTF-8", "ok\xff\xc3(", `ok\xff\xc3(`, `ok\xff\xc3(`},
		{"plain, non-ASCII", "grüße, 你好 — ok", "grüße, 你好 — ok", "grüße, 你好 — ok"},
		{"empty", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.text {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
			}
			if got := Line(tc.in); got != tc.line {
				t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
			}
			for _, out := range []string{Text(tc.in), Line(tc.in)} {
				for _, bad := range []string{"\x1b", "\r", "\x07", "\x7f", "\u009b", "\u202e"} {
					if bytes.Contains([]byte(out), []byte(bad)) {
						t.Errorf("output %q still holds %q", out, bad)
					}
				}
			}
		})
	}
}

// U1: every line of a block starts with the prefix, so a peer's "\nstate: answered" cannot
// pass for the CLI's own "state:" line.
func TestBlock(t *testing.T) {
	in := "hello\nstate: answered\r\nreply (now):\n" + clear
	want := "  | hello\n  | state: answered\\r\n  | reply (now):\n  | \\x1b[2J"
	if got := Block(in, "  | "); got != want {
		t.Fatalf("Block = %q, want %q", got, want)
	}
}

// U1: --json keeps the exact text: DEL, 8-bit and bidi controls are \u escapes in the output
// bytes, and decoding gives back the original string.
func TestJSON(t *testing.T) {
	in := osc52 + clear + title + fake + c1CSI + del + rlo + allBidi + "grüße"
	var buf bytes.Buffer
	if err := JSON(&buf, map[string]string{"text": in}); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	for _, bad := range []string{"\x1b", "\r", "\x07", "\x7f", "\u009b", "\u202e", "\u2066"} {
		if bytes.Contains(out, []byte(bad)) {
			t.Errorf("JSON output holds raw %q: %q", bad, out)
		}
	}
	for _, want := range []string{`\u001b]52;c;`, `\u007f`, `\u009b`, `\u202e`, `\u2069`, "grüße"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("JSON output lacks %s: %s", want, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("JSON output does not parse: %v\n%s", err, out)
	}
	if back["text"] != in {
		t.Fatalf("decoded text = %q, want the exact original %q", back["text"], in)
	}
}

// U1: a JSON line (anet evidence export) is escaped as --json is, compact on one line; a
// raw message is kept as the value it holds.
func TestJSONLine(t *testing.T) {
	in := osc52 + clear + title + fake + c1CSI + del + rlo + allBidi + "grüße\n"
	var buf bytes.Buffer
	if err := JSONLine(&buf, map[string]any{"text": in, "raw": json.RawMessage(`{ "a" : 1 }`)}); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	if n := bytes.Count(out, []byte{'\n'}); n != 1 || out[len(out)-1] != '\n' {
		t.Fatalf("JSONLine wrote %d newlines, want one at the end: %q", n, out)
	}
	for _, bad := range []string{"\x1b", "\r", "\x07", "\x7f", "\u009b", "\u202e", "\u2066"} {
		if bytes.Contains(out, []byte(bad)) {
			t.Errorf("JSON line holds raw %q: %q", bad, out)
		}
	}
	var back struct {
		Text string         `json:"text"`
		Raw  map[string]int `json:"raw"`
	}
	if err := json.Unmarshal(out, &back); err != nil || back.Text != in || back.Raw["a"] != 1 {
		t.Fatalf("JSON line reads back as %+v, %v; want the exact original", back, err)
	}
	if !bytes.Contains(out, []byte(`"raw":{"a":1}`)) {
		t.Fatalf("JSON line is not compact: %s", out)
	}
}

// U1: Walk reaches strings in nested structs, pointers, slices, maps (keys and values) and
// interfaces, so a whole status document is rendered by one call.
func TestWalk(t *testing.T) {
	type inner struct {
		Detail string
		Tags   []string
	}
	type doc struct {
		Name  string
		In    *inner
		List  []inner
		Info  map[string]any
		Codes map[string]string
		Raw   []byte
		n     string
	}
	d := doc{
		Name:  "a" + clear,
		In:    &inner{Detail: title, Tags: []string{rlo}},
		List:  []inner{{Detail: fake}},
		Info:  map[string]any{"err": osc52, "n": 3, "list": []any{c1CSI}},
		Codes: map[string]string{"\x1bk": del},
		Raw:   []byte("\x1b"),
		n:     "\x1b",
	}
	Walk(&d, Line)
	for _, tc := range []struct{ name, got, want string }{
		{"field", d.Name, `a\x1b[2J`},
		{"pointer", d.In.Detail, `\x1b]0;pwned\x07`},
		{"slice in pointer", d.In.Tags[0], `abc\u202edcba`},
		{"slice of structs", d.List[0].Detail, `\r\nfake line`},
		{"interface in map", d.Info["err"].(string), `\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07`},
		{"slice in interface", d.Info["list"].([]any)[0].(string), `\u009b31m`},
		{"map value", d.Codes[`\x1bk`], `a\x7fb`},
		{"bytes untouched", string(d.Raw), "\x1b"},
		{"unexported untouched", d.n, "\x1b"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if d.Info["n"] != 3 {
		t.Errorf("non-string map value changed: %v", d.Info["n"])
	}
}

// U1: on a web page the dashboard shows what Text shows visibly, and every character a
// browser would draw as nothing: the zero-width ones, the byte order mark, the tag
// characters (text hidden from the eye but read by a model), the Hangul fillers.
func TestPage(t *testing.T) {
	for _, tc := range []struct {
		name, in, page, line string
	}{
		{"RLO", rlo, `abc\u202edcba`, `abc\u202edcba`},
		{"ESC and CR", "\x1b[2J\r\nx", "\\x1b[2J\\r\nx", `\x1b[2J\r\nx`},
		{"zero-width space, joiners, BOM", "a\u200bb\u200cc\u200dd\ufeffe", `a\u200bb\u200cc\u200dd\ufeffe`, `a\u200bb\u200cc\u200dd\ufeffe`},
		{"word joiner and invisible operators", "\u2060\u2062\u2064", `\u2060\u2062\u2064`, `\u2060\u2062\u2064`},
		{"soft hyphen", "in\u00advisible", `in\u00advisible`, `in\u00advisible`},
		{"tag characters", "ok\U000e0041\U000e007f", `ok\U000e0041\U000e007f`, `ok\U000e0041\U000e007f`},
		{"Hangul fillers and CGJ", "\u3164\u115f\u1160\uffa0\u034f", `\u3164\u115f\u1160\uffa0\u034f`, `\u3164\u115f\u1160\uffa0\u034f`},
		{"newline and tab kept on a page", "a\n\tb", "a\n\tb", `a\n\tb`},
		{"plain, non-ASCII, emoji", "grüße, 你好 — ok ❤️", "grüße, 你好 — ok ❤️", "grüße, 你好 — ok ❤️"},
		{"HTML is left to the template", `<script>x</script>`, `<script>x</script>`, `<script>x</script>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Page(tc.in); got != tc.page {
				t.Errorf("Page(%q) = %q, want %q", tc.in, got, tc.page)
			}
			if got := PageLine(tc.in); got != tc.line {
				t.Errorf("PageLine(%q) = %q, want %q", tc.in, got, tc.line)
			}
		})
	}
}
