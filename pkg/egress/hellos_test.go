package egress

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// Hand-made and crypto/tls-made ClientHellos for the H6 tests.

type ext struct {
	typ  uint16
	data []byte
}

func u16vec(b []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...)
}

// sniExt builds a server_name extension with one host_name entry per name.
func sniExt(names ...string) ext {
	var list []byte
	for _, n := range names {
		list = append(list, 0)
		list = append(list, u16vec([]byte(n))...)
	}
	return ext{extServerName, u16vec(list)}
}

// helloMsg builds a ClientHello handshake message (type, 24-bit length, body) that
// crypto/tls parses: TLS 1.2 legacy version, AES-GCM suites, null compression.
func helloMsg(exts ...ext) []byte {
	body := []byte{3, 3}
	body = append(body, make([]byte, 32)...)
	body = append(body, 32)
	body = append(body, bytes.Repeat([]byte{7}, 32)...)
	body = append(body, u16vec([]byte{0x13, 0x01, 0xc0, 0x2f})...)
	body = append(body, 1, 0)
	if exts != nil {
		var eb []byte
		for _, e := range exts {
			eb = binary.BigEndian.AppendUint16(eb, e.typ)
			eb = append(eb, u16vec(e.data)...)
		}
		body = append(body, u16vec(eb)...)
	}
	n := len(body)
	return append([]byte{handshakeClientHlo, byte(n >> 16), byte(n >> 8), byte(n)}, body...)
}

// records wraps a handshake message into TLS records of at most frag bytes each.
func records(msg []byte, frag int) []byte {
	var out []byte
	for len(msg) > 0 {
		n := min(frag, len(msg))
		out = append(out, recordTypeHandshake, 3, 1, byte(n>>8), byte(n))
		out = append(out, msg[:n]...)
		msg = msg[n:]
	}
	return out
}

// handshakeOf strips the record headers of raw records again.
func handshakeOf(t testing.TB, raw []byte) []byte {
	t.Helper()
	var msg []byte
	for len(raw) > 0 {
		if len(raw) < 5 {
			t.Fatalf("handshakeOf: truncated record header")
		}
		n := int(binary.BigEndian.Uint16(raw[3:5]))
		msg = append(msg, raw[5:5+n]...)
		raw = raw[5+n:]
	}
	return msg
}

// goHello captures the ClientHello records crypto/tls sends for cfg.
func goHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	c := &captureConn{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = tls.Client(c, cfg).HandshakeContext(ctx)
	if c.buf.Len() == 0 {
		t.Fatalf("crypto/tls sent no ClientHello for %+v", cfg)
	}
	return c.buf.Bytes()
}

type captureConn struct{ buf bytes.Buffer }

func (c *captureConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *captureConn) Write(b []byte) (int, error)      { return c.buf.Write(b) }
func (c *captureConn) Close() error                     { return nil }
func (c *captureConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *captureConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *captureConn) SetDeadline(time.Time) error      { return nil }
func (c *captureConn) SetReadDeadline(time.Time) error  { return nil }
func (c *captureConn) SetWriteDeadline(time.Time) error { return nil }

// echConfigList builds a real ECHConfigList (RFC 9849 §4) with an X25519 key, so that
// crypto/tls sends a genuine encrypted ClientHello.
func echConfigList(t testing.TB, publicName string) []byte {
	t.Helper()
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("ech key: %v", err)
	}
	var c []byte
	c = append(c, 7)                                // config_id
	c = binary.BigEndian.AppendUint16(c, 0x0020)    // DHKEM(X25519, HKDF-SHA256)
	c = append(c, u16vec(k.PublicKey().Bytes())...) // public_key
	c = append(c, u16vec([]byte{0, 1, 0, 1})...)    // HKDF-SHA256, AES-128-GCM
	c = append(c, 0)                                // maximum_name_length
	c = append(c, byte(len(publicName)))            // public_name
	c = append(c, publicName...)                    //
	c = append(c, u16vec(nil)...)                   // extensions
	cfg := append(binary.BigEndian.AppendUint16(nil, extECH), u16vec(c)...)
	return u16vec(cfg)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// greaseECH is shaped like a GREASE (or real) outer ECH extension: type outer, HPKE suite,
// config id, 32-byte encapsulated key, random payload.
func greaseECH() ext {
	d := []byte{0, 0, 1, 0, 1, 0x42}
	d = append(d, u16vec(randomBytes(32))...)
	d = append(d, u16vec(randomBytes(208))...)
	return ext{extECH, d}
}
