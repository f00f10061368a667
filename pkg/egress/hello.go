package egress

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"time"
)

// MaxHelloBytes caps the bytes read while waiting for a complete ClientHello (H6). A real
// hello is 0.5–2 KB even with a post-quantum key share.
const MaxHelloBytes = 64 << 10

const (
	recordTypeAlert     = 21
	recordTypeHandshake = 22
	maxRecordPlaintext  = 1 << 14
	handshakeClientHlo  = 1

	extServerName = 0x0000
	extECH        = 0xfe0d // RFC 9849 encrypted_client_hello (outer, inner and GREASE look alike)
	extECHLegacy  = 0xffce // draft encrypted_server_name (ESNI)
	extECHOuter   = 0xfd00 // ech_outer_extensions: only ever inside an inner hello
)

// checkHello reads one ClientHello from r and applies H6 twice: by our parser and by
// crypto/tls. It returns the raw records to replay upstream.
func checkHello(r io.Reader, host string) ([]byte, *refusal) {
	raw, _, ref := readHello(r, host)
	return raw, ref
}

// readHello is checkHello that also returns the first server name the hello carries, for the
// tunnel's receipt (H6): "" when it carries none or could not be parsed that far.
func readHello(r io.Reader, host string) (raw []byte, sni string, _ *refusal) {
	raw, body, ref := readClientHello(r)
	if ref != nil {
		return raw, "", ref
	}
	sni, ref = inspectHelloNamed(body, host)
	if ref == nil {
		ref = checkHelloWithTLS(raw, host)
	}
	return raw, sni, ref
}

// readClientHello reads TLS records from r until one complete ClientHello handshake message
// has been reassembled (it may span many records, each of which may span many reads). It
// returns the raw records, to be replayed upstream unchanged, and the hello's body.
func readClientHello(r io.Reader) (raw, body []byte, _ *refusal) {
	var hs []byte
	var hdr [5]byte
	for first := true; ; first = false {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if first && err == io.EOF {
				// The agent closed the tunnel without sending anything: not an attack.
				return nil, nil, &refusal{detail: "closed before the hello"}
			}
			return nil, nil, readRefusal(err, len(raw))
		}
		typ, major, n := hdr[0], hdr[1], int(binary.BigEndian.Uint16(hdr[3:]))
		if typ != recordTypeHandshake || major != 3 {
			if first {
				return nil, nil, refuse(NotTLS, "first bytes %x", hdr[:])
			}
			return nil, nil, refuse(BadHello, "record type %d inside the hello", typ)
		}
		if n == 0 || n > maxRecordPlaintext {
			return nil, nil, refuse(BadHello, "record length %d", n)
		}
		if len(raw)+len(hdr)+n > MaxHelloBytes {
			return nil, nil, refuse(HelloTooLarge, "more than %d bytes without a complete hello", MaxHelloBytes)
		}
		raw = append(raw, hdr[:]...)
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if _, err := io.ReadFull(r, raw[start:]); err != nil {
			return nil, nil, readRefusal(err, len(raw))
		}
		hs = append(hs, raw[start:]...)
		if len(hs) < 4 {
			continue
		}
		if hs[0] != handshakeClientHlo {
			return nil, nil, refuse(BadHello, "handshake type %d, want client_hello", hs[0])
		}
		total := 4 + (int(hs[1])<<16 | int(hs[2])<<8 | int(hs[3]))
		if total > MaxHelloBytes {
			return nil, nil, refuse(HelloTooLarge, "client_hello of %d bytes", total)
		}
		if len(hs) < total {
			continue
		}
		if len(hs) > total {
			// A client sends nothing else in handshake records before the server answers.
			return nil, nil, refuse(BadHello, "%d handshake bytes after the client_hello", len(hs)-total)
		}
		return raw, hs[4:total], nil
	}
}

func readRefusal(err error, got int) *refusal {
	if errors.Is(err, net.ErrClosed) {
		return refuse(RunOver, "tunnel closed while reading the hello")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return refuse(HelloTimeout, "no complete hello before the deadline (%d bytes)", got)
	}
	return refuse(BadHello, "reading the hello after %d bytes: %v", got, err)
}

// inspectHello parses a ClientHello body by hand (RFC 8446 §4.1.2) and applies H6: exactly
// one host_name equal to want, no ECH extension of any kind, no duplicate extension.
func inspectHello(body []byte, want string) *refusal {
	_, ref := inspectHelloNamed(body, want)
	return ref
}

// inspectHelloNamed is inspectHello that also returns the first host_name it read, whether
// the hello passes or not.
func inspectHelloNamed(body []byte, want string) (string, *refusal) {
	s := helloReader(body)
	var ok = s.skip(2+32) && s.skipVec(1) && s.skipVec(2) && s.skipVec(1)
	if !ok {
		return "", refuse(BadHello, "truncated hello before the extensions")
	}
	if s.empty() {
		return "", refuse(SNIMismatch, "no extensions, so no server name")
	}
	exts, ok := s.vec(2)
	if !ok || !s.empty() {
		return "", refuse(BadHello, "bad extensions block")
	}
	seen := map[uint16]bool{}
	var names []string
	ech := uint16(0)
	for !exts.empty() {
		typ, ok1 := exts.u16()
		data, ok2 := exts.vec(2)
		if !ok1 || !ok2 {
			return "", refuse(BadHello, "truncated extension")
		}
		if seen[typ] {
			return "", refuse(BadHello, "extension %#04x twice", typ)
		}
		seen[typ] = true
		switch typ {
		case extECH, extECHLegacy, extECHOuter:
			ech = typ
		case extServerName:
			list, ok := data.vec(2)
			if !ok || !data.empty() {
				return "", refuse(BadHello, "bad server_name extension")
			}
			for !list.empty() {
				nt, ok1 := list.u8()
				name, ok2 := list.vec(2)
				if !ok1 || !ok2 {
					return "", refuse(BadHello, "bad server_name entry")
				}
				if nt == 0 {
					names = append(names, string(name))
				}
			}
		}
	}
	first := ""
	if len(names) > 0 {
		first = names[0]
	}
	if ech != 0 {
		return first, refuse(ECHRefused, "extension %#04x", ech)
	}
	switch {
	case len(names) == 0:
		return first, refuse(SNIMismatch, "no server name, want %q", want)
	case len(names) > 1:
		return first, refuse(SNIMismatch, "%d server names, want one", len(names))
	case names[0] != want:
		return first, refuse(SNIMismatch, "server name %q, want %q", names[0], want)
	}
	return first, nil
}

// errHelloSeen stops crypto/tls right after it has parsed the hello.
var errHelloSeen = errors.New("hello captured")

// checkHelloWithTLS is the second, independent check of the same bytes: crypto/tls parses
// the recorded records as a server would, and its view must agree with ours (fail closed
// twice: a hello our parser accepts but crypto/tls reads differently is refused).
func checkHelloWithTLS(raw []byte, want string) *refusal {
	var info *tls.ClientHelloInfo
	cfg := &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		info = chi
		return nil, errHelloSeen
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = tls.Server(&replayConn{data: raw}, cfg).HandshakeContext(ctx)
	if info == nil {
		return refuse(BadHello, "crypto/tls could not parse the hello")
	}
	if info.ServerName != want {
		return refuse(SNIMismatch, "crypto/tls reads server name %q, want %q", info.ServerName, want)
	}
	if slices.Contains(info.Extensions, extECH) || slices.Contains(info.Extensions, extECHLegacy) {
		return refuse(ECHRefused, "crypto/tls sees ECH")
	}
	return nil
}

// alertFor is the TLS alert description sent before closing a refused tunnel, so the
// client reports a TLS failure instead of a bare reset.
func alertFor(r *refusal) (byte, bool) {
	switch r.code {
	case SNIMismatch, ECHRefused:
		return 49, true // access_denied
	case BadHello, HelloTooLarge:
		return 50, true // decode_error
	case DialFailed:
		return 80, true // internal_error: the hello was fine, the server is not reachable
	default:
		return 0, false
	}
}

func alertRecord(desc byte) []byte {
	return []byte{recordTypeAlert, 3, 3, 0, 2, 2, desc}
}

// replayConn is a read-only net.Conn over recorded bytes; writes are discarded.
type replayConn struct {
	data []byte
}

func (c *replayConn) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b, c.data)
	c.data = c.data[n:]
	return n, nil
}
func (c *replayConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *replayConn) Close() error                     { return nil }
func (c *replayConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *replayConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *replayConn) SetDeadline(time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(time.Time) error { return nil }

// helloReader is a bounds-checked cursor over hello bytes.
type helloReader []byte

func (s *helloReader) empty() bool { return len(*s) == 0 }

func (s *helloReader) skip(n int) bool {
	if len(*s) < n {
		return false
	}
	*s = (*s)[n:]
	return true
}

func (s *helloReader) u8() (byte, bool) {
	if len(*s) < 1 {
		return 0, false
	}
	v := (*s)[0]
	*s = (*s)[1:]
	return v, true
}

func (s *helloReader) u16() (uint16, bool) {
	if len(*s) < 2 {
		return 0, false
	}
	v := binary.BigEndian.Uint16(*s)
	*s = (*s)[2:]
	return v, true
}

// vec reads a vector with a big-endian length prefix of lenBytes (1 or 2) bytes.
func (s *helloReader) vec(lenBytes int) (helloReader, bool) {
	var n int
	switch lenBytes {
	case 1:
		v, ok := s.u8()
		if !ok {
			return nil, false
		}
		n = int(v)
	default:
		v, ok := s.u16()
		if !ok {
			return nil, false
		}
		n = int(v)
	}
	if len(*s) < n {
		return nil, false
	}
	v := (*s)[:n]
	*s = (*s)[n:]
	return v, true
}

func (s *helloReader) skipVec(lenBytes int) bool {
	_, ok := s.vec(lenBytes)
	return ok
}
