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

// validPunycode reports whether an "xn--" label decodes to a label of letters, digits, marks
// and hyphens with at least one non-ASCII code point (a U-label).
func validPunycode(label string) bool {
	u, err := decodePunycode(strings.TrimPrefix(label, "xn--"))
	if err != nil {
		return false
	}
	nonASCII := false
	for _, r := range u {
		if r >= utf8.RuneSelf {
			nonASCII = true
		}
		// IDNA labels hold letters, digits, marks and hyphens; control or symbol code
		// points mean the label is not a real A-label.
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) && r != '-' {
			return false
		}
	}
	return nonASCII
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
