// Package canonical is the node's one length-prefixed encoding, the bytes that are hashed and
// signed: an ASCII tag naming the format and its version, then each field as a 4-byte
// big-endian length followed by that many bytes. Evidence entries (anet-evidence-v1, see
// pkg/store), peer messages (anet-msg-v1) and acks (anet-ack-v1, see pkg/peer) all use it, so
// every signature the node makes or checks is over bytes built here.
//
// The encoding is injective: two different field lists under one tag never give the same
// bytes, so a signature over one cannot be replayed as another. Changing a byte of it breaks
// every stored chain and every peer; the golden tests here and in pkg/store and pkg/peer pin it.
package canonical

import (
	"encoding/binary"
	"fmt"
)

// Encode returns tag followed by each field with its 4-byte big-endian length. A field of
// 4 GiB or more cannot be encoded; callers bound their fields far below that.
func Encode[F ~string | ~[]byte](tag string, fields ...F) []byte {
	n := len(tag)
	for _, f := range fields {
		n += 4 + len(f)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, tag...)
	for _, f := range fields {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(f)))
		buf = append(buf, f...)
	}
	return buf
}

// Decode splits data, which must start with tag, into exactly want fields; every byte must
// be used. Errors say which field is wrong.
func Decode(data []byte, tag string, want int) ([]string, error) {
	if len(data) < len(tag) || string(data[:len(tag)]) != tag {
		return nil, fmt.Errorf("does not start with %q", tag)
	}
	rest := data[len(tag):]
	out := make([]string, 0, want)
	for i := 0; i < want; i++ {
		if len(rest) < 4 {
			return nil, fmt.Errorf("field %d: truncated length", i+1)
		}
		l := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(l) > uint64(len(rest)) {
			return nil, fmt.Errorf("field %d: length %d past the end", i+1, l)
		}
		out = append(out, string(rest[:l]))
		rest = rest[l:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the last field", len(rest))
	}
	return out, nil
}
