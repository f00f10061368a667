package modelproxy

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
)

// keyScrub takes the operator's key out of every answer before the agent gets it (E1). The
// proxy puts the key on each request; an upstream that echoes request headers, or quotes the
// key in an error (an operator's own api_base, a gateway, a debug endpoint), would otherwise
// hand it to the agent. Each occurrence is replaced by a marker of the same length, so a
// Content-Length stays right and the agent can tell what happened. The key is looked for in
// every spelling an encoder gives it (secretForms), and so is the run's placeholder: the
// upstream never receives it (E7), so an answer that holds it quotes what the agent sent, and
// the token of a live endpoint has no business in the model's text, where the agent may copy
// it into its answer or its files.
type keyScrub struct {
	// key and marker are the key as it is and its marker (pats[0]); keyS and markerS the same,
	// for header values.
	key, marker   []byte
	keyS, markerS string
	// pats are every spelling of the key and of the placeholder, the key as it is first.
	pats []scrubPattern

	host string
	log  *slog.Logger
	// echoes counts the answers in which the key was found; the first is logged.
	echoes atomic.Int64
	// tokenEchoes counts those in which the placeholder was found; the first is logged.
	tokenEchoes atomic.Int64
}

// scrubPattern is one spelling of a secret and the marker that replaces it.
type scrubPattern struct {
	b, marker  []byte
	s, markerS string
	what       echo
}

// echo says which secrets an answer held.
type echo uint8

const (
	echoKey   echo = 1 << iota // the operator's key
	echoToken                  // the run's placeholder
)

// markerText is what a redacted key reads as, cut or padded to its length; tokenMarkerText the
// same for the placeholder.
const (
	markerText      = "anet-redacted-key"
	tokenMarkerText = "anet-redacted-token"
)

// markerEdges are the characters a marker begins and ends with, the first that no pattern
// holds. No pattern can then be read across a marker and the bytes beside it: any stretch that
// overlaps a marker and is not inside it covers its first or its last byte; and a marker that
// holds a pattern inside is made of the edge alone (see newScrub). None is a letter, so the
// edge also stays out of a match that ignores case (headers), none needs escaping in JSON, and
// all are legal in a header value.
const markerEdges = "*#~!.^|+=%@$:;,_-0123456789()[]{}<>?/'`&"

// newKeyScrub redacts key alone (tests of the key's own cases).
func newKeyScrub(key, host string, log *slog.Logger) (*keyScrub, error) {
	return newScrub(key, "", host, log)
}

// newScrub redacts key and, when it is not empty, the run's placeholder.
func newScrub(key, placeholder, host string, log *slog.Logger) (*keyScrub, error) {
	if key == "" {
		return nil, errors.New("model proxy: no key to redact")
	}
	k := &keyScrub{host: host, log: log}
	for _, f := range secretForms(key) {
		k.pats = append(k.pats, scrubPattern{b: []byte(f), s: f, what: echoKey})
	}
	if placeholder != "" {
		for _, f := range secretForms(placeholder) {
			if !k.has(f) {
				k.pats = append(k.pats, scrubPattern{b: []byte(f), s: f, what: echoToken})
			}
		}
	}
	var used [256]bool
	for _, p := range k.pats {
		for i := 0; i < len(p.s); i++ {
			used[p.s[i]] = true
		}
	}
	edge := -1
	for i := 0; i < len(markerEdges) && edge < 0; i++ {
		if !used[markerEdges[i]] {
			edge = int(markerEdges[i])
		}
	}
	// Only secrets that hold every one of them get here: any byte that is not a letter and
	// not in a pattern will do.
	for b := 0; b < 256 && edge < 0; b++ {
		if !isLetter(byte(b)) && !used[b] {
			edge = b
		}
	}
	if edge < 0 {
		return nil, fmt.Errorf("model proxy: the key holds every byte that is not a letter; it cannot be redacted")
	}
	for i := range k.pats {
		p := &k.pats[i]
		text := markerText
		if p.what == echoToken {
			text = tokenMarkerText
		}
		n := len(p.s)
		m := bytes.Repeat([]byte{byte(edge)}, n)
		if n > 2 {
			copy(m[1:n-1], text)
		}
		if k.inside(string(m)) {
			// A short secret made of the marker's letters ("red"): the edge alone holds none.
			m = bytes.Repeat([]byte{byte(edge)}, n)
		}
		p.marker, p.markerS = m, string(m)
	}
	k.key, k.marker, k.keyS, k.markerS = k.pats[0].b, k.pats[0].marker, k.pats[0].s, k.pats[0].markerS
	return k, nil
}

func (k *keyScrub) has(f string) bool {
	for _, p := range k.pats {
		if p.s == f {
			return true
		}
	}
	return false
}

// inside reports whether s holds a pattern, ignoring ASCII case.
func (k *keyScrub) inside(s string) bool {
	for _, p := range k.pats {
		if indexFold(s, p.s) >= 0 {
			return true
		}
	}
	return false
}

func isLetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }

// echoed records an answer that held a secret: logged for the first of each (the secret is
// not in the line, the host is), counted for all (UpstreamStats.KeyEchoes for the key).
func (k *keyScrub) echoed(what echo) {
	if what&echoKey != 0 && k.echoes.Add(1) == 1 {
		k.log.Warn("model upstream echoed the operator's key; the node redacted it from the answer", "host", k.host)
	}
	if what&echoToken != 0 && k.tokenEchoes.Add(1) == 1 {
		k.log.Warn("model upstream's answer held the run's placeholder token; the node redacted it", "host", k.host)
	}
}

// body replaces every pattern in data and returns what may leave now; hold is the number of
// bytes at its end that could be the start of a pattern the next write completes (they are
// not in out). data is copied into *buf before a byte of it changes unless owned says it
// already is *buf. The replacement is leftmost-first, the longest pattern where two begin
// at one place, as if the whole answer were scanned at once: bytes that leave can never be
// part of a pattern that later bytes complete, and how the answer is cut changes nothing.
// final says no bytes follow: nothing is held, what was held last time is redacted as it is.
func (k *keyScrub) body(data []byte, owned, final bool, buf *[]byte) (out []byte, hold int, found echo) {
	if len(k.pats) == 1 {
		return k.body1(data, owned, final, buf)
	}
	// next[i] is where pats[i] next occurs at or after from (-1: nowhere); a marker written
	// before it leaves it where it was, since no marker makes or breaks a pattern.
	var nextArr [8]int
	next := nextArr[:0]
	if len(k.pats) > len(nextArr) {
		next = make([]int, 0, len(k.pats))
	}
	for _, p := range k.pats {
		next = append(next, index(data, p.b))
	}
	from := 0
	for {
		at, best := -1, -1
		for i, p := range k.pats {
			if next[i] >= 0 && next[i] < from {
				if j := index(data[from:], p.b); j >= 0 {
					next[i] = from + j
				} else {
					next[i] = -1
				}
			}
			if n := next[i]; n >= 0 && (at < 0 || n < at || n == at && len(p.b) > len(k.pats[best].b)) {
				at, best = n, i
			}
		}
		if at < 0 {
			break
		}
		// A longer pattern that begins at or before this one may be completed by the next
		// write: then everything from where it begins waits for that write.
		if h := k.partial(data[from:], final); h > 0 && len(data)-h <= at {
			return data[:len(data)-h], h, found
		}
		if found == 0 && !owned {
			*buf = append((*buf)[:0], data...)
			data = *buf
		}
		p := &k.pats[best]
		found |= p.what
		copy(data[at:], p.marker)
		from = at + len(p.b)
	}
	hold = k.partial(data[from:], final)
	return data[:len(data)-hold], hold, found
}

// body1 is body for a key that has one spelling and no placeholder beside it.
func (k *keyScrub) body1(data []byte, owned, final bool, buf *[]byte) (out []byte, hold int, found echo) {
	from := 0
	for {
		i := index(data[from:], k.key)
		if i < 0 {
			break
		}
		if found == 0 && !owned {
			*buf = append((*buf)[:0], data...)
			data = *buf
		}
		found = echoKey
		from += i
		copy(data[from:], k.marker)
		from += len(k.key)
	}
	hold = k.partial(data[from:], final)
	return data[:len(data)-hold], hold, found
}

// index is bytes.Index, fast for a long pattern too. bytes.Index finds a pattern of up to 31
// bytes with vector instructions (63 where the CPU has AVX2) but a longer one, as a real key
// is (108 bytes for Anthropic's), by a byte at a time: its first byte, then Rabin-Karp once
// that byte is common, five times slower over an answer's text. Its first 31 bytes are found
// the fast way instead, and are rare enough outside the key that checking the rest where they
// match costs nothing.
func index(data, pat []byte) int {
	if len(pat) <= fastIndexLen {
		return bytes.Index(data, pat)
	}
	for from := 0; ; {
		i := bytes.Index(data[from:], pat[:fastIndexLen])
		if i < 0 {
			return -1
		}
		if bytes.HasPrefix(data[from+i:], pat) {
			return from + i
		}
		from += i + 1
	}
}

const fastIndexLen = 31

// partial returns the length of the longest end of b that is a proper beginning of a pattern
// (none when final: nothing can complete it).
func (k *keyScrub) partial(b []byte, final bool) int {
	if final {
		return 0
	}
	hold := 0
	for _, p := range k.pats {
		hold = max(hold, partialOf(p.b, b))
	}
	return hold
}

// partialOf returns the length of the longest end of b that is a proper beginning of pat.
func partialOf(pat, b []byte) int {
	s := len(b) - min(len(b), len(pat)-1)
	for s < len(b) {
		j := bytes.IndexByte(b[s:], pat[0])
		if j < 0 {
			return 0
		}
		s += j
		if bytes.HasPrefix(pat, b[s:]) {
			return len(b) - s
		}
		s++
	}
	return 0
}

// header takes the secrets out of h: a header whose name holds one is dropped, a value that
// holds one has each occurrence replaced. Both ignore ASCII case, because the transport
// rewrites the case of header names (canonical form), and the names of trailers reach the
// agent as the value of a Trailer header.
func (k *keyScrub) header(h http.Header) (found echo) {
	for name, vs := range h {
		if what := k.indexAny(name); what.at >= 0 {
			delete(h, name)
			found |= k.pats[what.pat].what
			continue
		}
		for i, v := range vs {
			if r, what := k.replace(v); what != 0 {
				vs[i], found = r, found|what
			}
		}
	}
	return found
}

// replaceFold returns s with every secret replaced, ignoring ASCII case, and whether it held
// one.
func (k *keyScrub) replaceFold(s string) (string, bool) {
	r, what := k.replace(s)
	return r, what != 0
}

func (k *keyScrub) replace(s string) (string, echo) {
	m := k.indexAny(s)
	if m.at < 0 {
		return s, 0
	}
	var found echo
	var b strings.Builder
	b.Grow(len(s))
	for m.at >= 0 {
		p := &k.pats[m.pat]
		found |= p.what
		b.WriteString(s[:m.at])
		b.WriteString(p.markerS)
		s = s[m.at+len(p.s):]
		m = k.indexAny(s)
	}
	b.WriteString(s)
	return b.String(), found
}

type match struct{ at, pat int }

// indexAny finds the leftmost pattern in s ignoring ASCII case, the longest where two begin
// at one place; at is -1 when there is none.
func (k *keyScrub) indexAny(s string) match {
	m := match{at: -1}
	for i, p := range k.pats {
		limit := len(s)
		if m.at >= 0 {
			limit = min(limit, m.at+len(p.s))
		}
		if j := indexFold(s[:limit], p.s); j >= 0 && (m.at < 0 || j < m.at || j == m.at && len(p.s) > len(k.pats[m.pat].s)) {
			m = match{j, i}
		}
	}
	return m
}

// indexFold is strings.Index ignoring ASCII case.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if equalFoldASCII(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x != y && !(isLetter(x) && x|0x20 == y|0x20) {
			return false
		}
	}
	return true
}

// errAnswerEncoded: the upstream compressed its answer although the node asked for none
// (Accept-Encoding: identity, and the transport does not decompress). The key could pass
// inside it unseen, so such an answer never reaches the agent.
var errAnswerEncoded = errors.New("the model service sent a compressed answer")
