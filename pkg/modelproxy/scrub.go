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
// hand it to the agent. Each occurrence is replaced by a marker of the key's length, so a
// Content-Length stays right and the agent can tell what happened.
type keyScrub struct {
	key, marker []byte
	// keyS and markerS are the same, for header values.
	keyS, markerS string

	host string
	log  *slog.Logger
	// echoes counts the answers in which the key was found; the first is logged.
	echoes atomic.Int64
}

// markerText is what a redacted key reads as, cut or padded to the key's length.
const markerText = "anet-redacted-key"

// markerEdges are the characters a marker begins and ends with, the first the key does not
// hold. A key can then never be read across a marker and the bytes beside it: any stretch of
// the key's length that overlaps a marker covers its first or its last byte (see newKeyScrub).
// None is a letter, so the edge also stays out of a match that ignores case (headers), none
// needs escaping in JSON, and all are legal in a header value.
const markerEdges = "*#~!.^|+=%@$:;,_-0123456789()[]{}<>?/'`&"

func newKeyScrub(key, host string, log *slog.Logger) (*keyScrub, error) {
	if key == "" {
		return nil, errors.New("model proxy: no key to redact")
	}
	edge := -1
	for i := 0; i < len(markerEdges); i++ {
		if !strings.ContainsRune(key, rune(markerEdges[i])) {
			edge = int(markerEdges[i])
			break
		}
	}
	if edge < 0 {
		// Only a key that holds every one of them gets here: any byte that is not a letter
		// and not in the key will do.
		for b := 0; b < 256; b++ {
			if !isLetter(byte(b)) && bytes.IndexByte([]byte(key), byte(b)) < 0 {
				edge = b
				break
			}
		}
	}
	if edge < 0 {
		return nil, fmt.Errorf("model proxy: the key holds every byte that is not a letter; it cannot be redacted")
	}
	n := len(key)
	m := bytes.Repeat([]byte{byte(edge)}, n)
	if n > 2 {
		copy(m[1:n-1], markerText)
	}
	return &keyScrub{key: []byte(key), marker: m, keyS: key, markerS: string(m), host: host, log: log}, nil
}

func isLetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }

// echoed records an answer that held the key: logged for the first (the key is not in the
// line, the host is), counted for all (UpstreamStats.KeyEchoes).
func (k *keyScrub) echoed() {
	if k.echoes.Add(1) == 1 {
		k.log.Warn("model upstream echoed the operator's key; the node redacted it from the answer", "host", k.host)
	}
}

// body replaces the key in data and returns what may leave now; hold is the number of bytes
// at its end that could be the start of a key the next write completes (they are not in out).
// data is copied into *buf before a byte of it changes unless owned says it already is *buf.
// The replacement is leftmost-first, as if the whole answer were scanned at once: bytes that
// leave can never be part of a key that later bytes complete.
func (k *keyScrub) body(data []byte, owned bool, buf *[]byte) (out []byte, hold int, found bool) {
	from := 0
	for {
		i := bytes.Index(data[from:], k.key)
		if i < 0 {
			break
		}
		if !found && !owned {
			*buf = append((*buf)[:0], data...)
			data = *buf
		}
		found = true
		from += i
		copy(data[from:], k.marker)
		from += len(k.key)
	}
	hold = k.partial(data[from:])
	return data[:len(data)-hold], hold, found
}

// partial returns the length of the longest end of b that is a proper beginning of the key.
func (k *keyScrub) partial(b []byte) int {
	s := len(b) - min(len(b), len(k.key)-1)
	for s < len(b) {
		j := bytes.IndexByte(b[s:], k.key[0])
		if j < 0 {
			return 0
		}
		s += j
		if bytes.HasPrefix(k.key, b[s:]) {
			return len(b) - s
		}
		s++
	}
	return 0
}

// header takes the key out of h: a header whose name holds it is dropped, a value that holds
// it has each occurrence replaced. Both ignore ASCII case, because the transport rewrites the
// case of header names (canonical form), and the names of trailers reach the agent as the
// value of a Trailer header.
func (k *keyScrub) header(h http.Header) (found bool) {
	for name, vs := range h {
		if indexFold(name, k.keyS) >= 0 {
			delete(h, name)
			found = true
			continue
		}
		for i, v := range vs {
			if r, ok := k.replaceFold(v); ok {
				vs[i], found = r, true
			}
		}
	}
	return found
}

func (k *keyScrub) replaceFold(s string) (string, bool) {
	i := indexFold(s, k.keyS)
	if i < 0 {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		b.WriteString(k.markerS)
		s = s[i+len(k.keyS):]
		i = indexFold(s, k.keyS)
	}
	b.WriteString(s)
	return b.String(), true
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
