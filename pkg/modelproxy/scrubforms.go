package modelproxy

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// secretForms returns the spellings of s an answer may carry it in, s itself first, each once.
// An upstream that quotes a secret rarely writes it raw: it writes it inside a JSON string, or
// in a URL, as its own encoder spells it. The key is usually made of letters, digits, '-' and
// '_', which every one of these spells as itself, so for such a key the list is s alone and
// the scan costs what it did before. A key from an operator's own service may hold '/', '+',
// '=' (base64) or more, and then each spelling below is a pattern of its own:
//   - JSON, as encoders differ: '/' as `\/` or not (PHP, org.json), '<' '>' '&' as \u003c…
//     or not (Go, Gson), every non-ASCII rune as \uXXXX or not (Python, PHP, Jackson), the
//     hex digits in lower or upper case; '"', '\' and control bytes are escaped by all;
//   - each of those escaped once more, as a gateway writes an upstream's JSON error into a
//     string of its own ({"error":"upstream said: {\"message\":\"…\"}"});
//   - percent-encoded, as a URL in an error quotes it (url.QueryEscape, url.PathEscape).
//
// Forms a service would have to invent (base64, a key cut short, other cases of the letters)
// are not here: the first is not the key's text, the others are not the whole key.
func secretForms(s string) []string {
	forms := []string{s}
	add := func(f string) {
		for _, g := range forms {
			if g == f {
				return
			}
		}
		forms = append(forms, f)
	}
	for flags := range jsonAll + 1 {
		j := jsonEscape(s, flags)
		add(j)
		add(jsonEscape(j, 0))
	}
	add(url.QueryEscape(s))
	add(url.PathEscape(s))
	return forms
}

// Ways a JSON encoder may spell a string's characters beyond what every encoder escapes.
const (
	jsonSlash    = 1 << iota // '/' as `\/`
	jsonHTML                 // '<', '>', '&', U+2028, U+2029 as \uXXXX
	jsonNonASCII             // every rune above U+007F as \uXXXX (a surrogate pair above U+FFFF)
	jsonUpperHex             // \u00E9, not \u00e9
	jsonAll      = jsonSlash | jsonHTML | jsonNonASCII | jsonUpperHex
)

// jsonEscape spells s as the inside of a JSON string with the escapes flags name. A byte that
// is not UTF-8 is kept as it is: an encoder would write U+FFFD for it, which is not the key.
func jsonEscape(s string, flags int) string {
	hex := "0123456789abcdef"
	if flags&jsonUpperHex != 0 {
		hex = "0123456789ABCDEF"
	}
	var b strings.Builder
	u := func(r rune) {
		b.WriteString(`\u`)
		for sh := 12; sh >= 0; sh -= 4 {
			b.WriteByte(hex[(r>>sh)&0xf])
		}
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteByte(s[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			u(r)
		case r == '/' && flags&jsonSlash != 0:
			b.WriteString(`\/`)
		case (r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029') && flags&jsonHTML != 0:
			u(r)
		case r > 0x7f && flags&jsonNonASCII != 0:
			if r > 0xffff {
				r -= 0x10000
				u(0xd800 + (r >> 10))
				u(0xdc00 + (r & 0x3ff))
			} else {
				u(r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
