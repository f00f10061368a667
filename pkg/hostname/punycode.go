package hostname

import (
	"errors"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Punycode (RFC 3492) decoding, only to tell a real A-label from an "xn--" label that decodes
// to nothing or to plain ASCII. golang.org/x/net/idna would need golang.org/x/text, which this
// module does not carry.
const (
	pcBase        = 36
	pcTMin        = 1
	pcTMax        = 26
	pcSkew        = 38
	pcDamp        = 700
	pcInitialBias = 72
	pcInitialN    = 128
)

var errPunycode = errors.New("invalid punycode")

// validPunycode reports whether an "xn--" label is the one A-label of a U-label: it decodes
// to letters, digits, marks and hyphens with at least one non-ASCII code point, follows the
// U-label rules of RFC 5891 §4.2.3, and encoding the decoded label gives back exactly these
// bytes. Without that last check "xn---000a" and "xn--000a" would be two spellings of one
// label, and an allow-list compares names byte for byte.
func validPunycode(label string) bool {
	enc := strings.TrimPrefix(label, "xn--")
	u, err := decodePunycode(enc)
	if err != nil {
		return false
	}
	nonASCII := false
	for i, r := range u {
		if r >= utf8.RuneSelf {
			nonASCII = true
		}
		// IDNA labels hold letters, digits, marks and hyphens; control or symbol code
		// points mean the label is not a real A-label. Upper case is refused as in the
		// ASCII part of a name: IDNA maps it to lower case, so it would be a second
		// spelling of the lower-case label.
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) && r != '-' ||
			unicode.IsUpper(r) || unicode.IsTitle(r) {
			return false
		}
		if i == 0 && unicode.IsMark(r) {
			return false // RFC 5891 §4.2.3.2: a label never starts with a combining mark
		}
	}
	// RFC 5891 §4.2.3.1: no hyphen first or last, none in the third and fourth positions.
	if strings.HasPrefix(u, "-") || strings.HasSuffix(u, "-") || len(u) >= 4 && u[2:4] == "--" {
		return false
	}
	again, ok := encodePunycode(u)
	return nonASCII && ok && again == enc
}

// encodePunycode is RFC 3492 §6.3's encoder, used to check that a label is the canonical
// encoding of what it decodes to.
func encodePunycode(u string) (string, bool) {
	runes := []rune(u)
	var out []byte
	for _, r := range runes {
		if r < utf8.RuneSelf {
			out = append(out, byte(r))
		}
	}
	b := len(out)
	if b > 0 {
		out = append(out, '-')
	}
	n, delta, bias := pcInitialN, 0, pcInitialBias
	for h := b; h < len(runes); {
		m := math.MaxInt32
		for _, r := range runes {
			if int(r) >= n && int(r) < m {
				m = int(r)
			}
		}
		if m-n > (math.MaxInt32-delta)/(h+1) {
			return "", false
		}
		delta += (m - n) * (h + 1)
		n = m
		for _, r := range runes {
			if int(r) < n {
				if delta == math.MaxInt32 {
					return "", false
				}
				delta++
			}
			if int(r) != n {
				continue
			}
			q := delta
			for k := pcBase; ; k += pcBase {
				t := min(max(k-bias, pcTMin), pcTMax)
				if q < t {
					break
				}
				out = append(out, pcEncodeDigit(t+(q-t)%(pcBase-t)))
				q = (q - t) / (pcBase - t)
			}
			out = append(out, pcEncodeDigit(q))
			bias = pcAdapt(delta, h+1, h == b)
			delta = 0
			h++
		}
		delta++
		n++
	}
	return string(out), true
}

func pcEncodeDigit(d int) byte {
	if d < 26 {
		return byte('a' + d)
	}
	return byte('0' + d - 26)
}

func decodePunycode(s string) (string, error) {
	var out []rune
	if b := strings.LastIndexByte(s, '-'); b >= 0 {
		for _, c := range s[:b] {
			if c >= utf8.RuneSelf {
				return "", errPunycode
			}
			out = append(out, c)
		}
		s = s[b+1:]
	}
	n, i, bias := pcInitialN, 0, pcInitialBias
	for pos := 0; pos < len(s); {
		oldi, w := i, 1
		for k := pcBase; ; k += pcBase {
			if pos == len(s) {
				return "", errPunycode
			}
			d := pcDigit(s[pos])
			pos++
			if d < 0 || d > (math.MaxInt32-i)/w {
				return "", errPunycode
			}
			i += d * w
			t := min(max(k-bias, pcTMin), pcTMax)
			if d < t {
				break
			}
			if w > math.MaxInt32/(pcBase-t) {
				return "", errPunycode
			}
			w *= pcBase - t
		}
		size := len(out) + 1
		bias = pcAdapt(i-oldi, size, oldi == 0)
		if i/size > math.MaxInt32-n {
			return "", errPunycode
		}
		n += i / size
		i %= size
		if n > utf8.MaxRune || (n >= 0xd800 && n <= 0xdfff) {
			return "", errPunycode
		}
		out = append(out, 0)
		copy(out[i+1:], out[i:])
		out[i] = rune(n)
		i++
	}
	return string(out), nil
}

func pcDigit(c byte) int {
	switch {
	case c >= 'a' && c <= 'z':
		return int(c - 'a')
	case c >= '0' && c <= '9':
		return int(c-'0') + 26
	}
	return -1
}

func pcAdapt(delta, numPoints int, first bool) int {
	if first {
		delta /= pcDamp
	} else {
		delta /= 2
	}
	delta += delta / numPoints
	k := 0
	for delta > ((pcBase-pcTMin)*pcTMax)/2 {
		delta /= pcBase - pcTMin
		k += pcBase
	}
	return k + (pcBase-pcTMin+1)*delta/(delta+pcSkew)
}
