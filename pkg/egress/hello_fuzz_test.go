package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"slices"
	"testing"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/hostname"
	"anet.dev/anet/pkg/reasons"
)

// tlsView is what crypto/tls, as a server, reads of recorded hello bytes; nil if it cannot.
func tlsView(raw []byte) *tls.ClientHelloInfo {
	var info *tls.ClientHelloInfo
	cfg := &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		info = chi
		return nil, errHelloSeen
	}}
	// No deadline: replayConn never blocks, and a context with one starts a goroutine whose
	// coverage would make runs of one input differ.
	_ = tls.Server(&replayConn{data: raw}, cfg).HandshakeContext(context.Background())
	return info
}

// maxFuzzHello keeps fuzz inputs small: the fuzzer minimises every new input for up to a
// minute, and with a post-quantum key share (1.2 KB) or a 64 KiB hello that is the whole
// campaign. The 64 KiB bound itself is TestCheckHello's (capHello); the fuzz seeds from
// crypto/tls use X25519 alone.
const maxFuzzHello = 1 << 10

// helloCodes are the refusals a hello read from memory can get.
var helloCodes = []reasons.Code{NotTLS, BadHello, HelloTooLarge, SNIMismatch, ECHRefused}

// FuzzCheckHello (H6): for any bytes through a tunnel to a host that passed the host name
// rule, checkHello either refuses with one of H6's codes or passes a hello that
//   - it read exactly: the raw records are a prefix of the bytes, nothing after them taken,
//     at most MaxHelloBytes;
//   - crypto/tls reads as naming exactly that host, without ECH;
//   - names no other host (a second name, or another, is SNIMismatch);
//   - passes the same way however its handshake bytes are cut into records.
func FuzzCheckHello(f *testing.F) {
	for _, c := range helloCases(f) {
		if !c.closeMid && len(c.raw) <= maxFuzzHello {
			f.Add(c.raw, uint16(37))
		}
	}
	for _, cfg := range []*tls.Config{
		{ServerName: "pypi.org"},
		{ServerName: "xn--mnchen-3ya.de", MaxVersion: tls.VersionTLS12},
		{ServerName: "files.pythonhosted.org", NextProtos: []string{"h2", "http/1.1"}},
		{ServerName: "pypi.org", MinVersion: tls.VersionTLS13, EncryptedClientHelloConfigList: echConfigList(f, "pypi.org")},
	} {
		cfg.CurvePreferences = []tls.CurveID{tls.X25519}
		if raw := goHello(f, cfg); len(raw) <= maxFuzzHello {
			f.Add(raw, uint16(1))
		} else {
			f.Fatalf("goHello(%+v) is %d bytes, more than the fuzz inputs' %d", cfg, len(raw), maxFuzzHello)
		}
	}
	f.Add(records(helloMsg(sniExt("xn--mnchen-3ya.de")), 1<<14), uint16(1))
	f.Add(records(helloMsg(sniExt("pypi.org", "pypi.org")), 1<<14), uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, frag uint16) {
		if len(data) > maxFuzzHello {
			return
		}
		want := "pypi.org"
		if info := tlsView(data); info != nil && hostname.Problem(info.ServerName) == "" {
			want = info.ServerName // the host the agent's client would have sent CONNECT for
		}
		r := &testkit.CountingReader{R: bytes.NewReader(data)}
		raw, ref := checkHello(r, want)
		if r.N > MaxHelloBytes+5 {
			t.Fatalf("checkHello read %d bytes, more than MaxHelloBytes and one record header", r.N)
		}
		if ref != nil {
			if len(data) > 0 && !slices.Contains(helloCodes, ref.code) {
				t.Fatalf("checkHello refused with %q (%s), not an H6 code", ref.code, ref.detail)
			}
			return
		}
		if len(raw) > MaxHelloBytes || r.N != len(raw) || !bytes.Equal(raw, data[:len(raw)]) {
			t.Fatalf("checkHello passed %d raw bytes after reading %d: not the prefix it read", len(raw), r.N)
		}
		info := tlsView(raw)
		if info == nil || info.ServerName != want || slices.Contains(info.Extensions, extECH) {
			t.Fatalf("checkHello(%x) passed for %q, but crypto/tls reads %+v", raw, want, info)
		}
		if _, ref := checkHello(bytes.NewReader(raw), "a"+want); ref == nil || ref.code != SNIMismatch {
			t.Fatalf("checkHello(hello for %q) for another host = %v, want SNIMismatch", want, ref)
		}
		size := min(max(int(frag), 1), maxRecordPlaintext)
		again := records(handshakeOf(t, raw), size)
		if len(again) <= MaxHelloBytes {
			if _, ref := checkHello(bytes.NewReader(again), want); ref != nil {
				t.Fatalf("checkHello(the same hello in %d-byte records) = %v, want it passed", size, ref)
			}
		}
	})
}
