package egress

import (
	"bytes"
	"crypto/tls"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

type helloCase struct {
	name      string
	raw       []byte
	byteWrite bool         // send in 1-byte writes (end-to-end test)
	closeMid  bool         // the agent closes after raw (raw is incomplete)
	want      reasons.Code // "" = the hello passes
	// Which of the two checks lets this refused hello through alone (the other one stops it).
	oursPasses, tlsPasses bool
}

// capHello returns a hand-made hello for pypi.org whose records total exactly size bytes.
func capHello(t testing.TB, size int) []byte {
	t.Helper()
	base := len(helloMsg(sniExt("pypi.org"), ext{0x0015, nil}))
	for pad := size - base - 64; pad < size; pad++ {
		raw := records(helloMsg(sniExt("pypi.org"), ext{0x0015, make([]byte, pad)}), 1<<14)
		if len(raw) == size {
			return raw
		}
		if len(raw) > size {
			break
		}
	}
	t.Fatalf("capHello(%d): no padding gives that size", size)
	return nil
}

// helloCases are the H6 attacks and controls, shared by the parser test and the
// end-to-end tunnel test.
func helloCases(t testing.TB) []helloCase {
	t.Helper()
	real := goHello(t, &tls.Config{ServerName: "pypi.org"})
	realMsg := handshakeOf(t, real)
	ech := goHello(t, &tls.Config{ServerName: "pypi.org", MinVersion: tls.VersionTLS13,
		EncryptedClientHelloConfigList: echConfigList(t, "pypi.org")})
	if !bytes.Contains(ech, []byte{0xfe, 0x0d}) {
		t.Fatalf("crypto/tls did not send an ECH extension")
	}
	sni := sniExt("pypi.org")
	alpn := ext{0x0010, []byte{0, 3, 2, 'h', '2'}}
	return []helloCase{
		{name: "crypto/tls hello passes", raw: real},
		{name: "crypto/tls hello in 1-byte writes passes", raw: real, byteWrite: true},
		{name: "crypto/tls hello in 1-byte records and 1-byte writes passes", raw: records(realMsg, 1), byteWrite: true},
		{name: "crypto/tls hello in 37-byte records passes", raw: records(realMsg, 37)},
		{name: "hand-made hello passes", raw: records(helloMsg(alpn, sni), 1<<14)},
		{name: "hello of exactly 64 KiB passes", raw: capHello(t, MaxHelloBytes)},
		{name: "hello one byte over 64 KiB", raw: capHello(t, MaxHelloBytes+1), want: HelloTooLarge},
		{name: "hello declaring 16 MiB", raw: records([]byte{1, 0xff, 0xff, 0xff, 3, 3}, 1<<14), want: HelloTooLarge},
		{name: "SNI for another host", raw: goHello(t, &tls.Config{ServerName: "files.pythonhosted.org"}), want: SNIMismatch},
		{name: "SNI missing", raw: records(helloMsg(alpn), 1<<14), want: SNIMismatch},
		{name: "no extensions at all", raw: records(helloMsg(), 1<<14), want: SNIMismatch},
		{name: "SNI IP literal", raw: records(helloMsg(sniExt("151.101.0.223")), 1<<14), want: SNIMismatch},
		{name: "SNI upper case", raw: records(helloMsg(sniExt("PYPI.ORG")), 1<<14), want: SNIMismatch},
		{name: "SNI suffix", raw: records(helloMsg(sniExt("evil.pypi.org")), 1<<14), want: SNIMismatch},
		{name: "SNI two names, requested first", raw: records(helloMsg(sniExt("pypi.org", "evil.example.com")), 1<<14), want: SNIMismatch},
		{name: "SNI two names, requested second", raw: records(helloMsg(sniExt("evil.example.com", "pypi.org")), 1<<14), want: SNIMismatch},
		{name: "two server_name extensions", raw: records(helloMsg(sni, sniExt("evil.example.com")), 1<<14), want: BadHello},
		{name: "ECH from crypto/tls", raw: ech, want: ECHRefused},
		{name: "ECH GREASE-shaped outer", raw: records(helloMsg(sni, greaseECH()), 1<<14), want: ECHRefused},
		{name: "ECH inner", raw: records(helloMsg(sni, ext{extECH, []byte{1}}), 1<<14), want: ECHRefused},
		{name: "ECH malformed", raw: records(helloMsg(sni, ext{extECH, []byte{0xff, 0x00, 0x07}}), 1<<14), want: ECHRefused},
		{name: "ECH empty", raw: records(helloMsg(sni, ext{extECH, nil}), 1<<14), want: ECHRefused},
		{name: "ECH split across 1-byte records", raw: records(helloMsg(sni, greaseECH()), 1), want: ECHRefused},
		{name: "legacy ESNI 0xffce", raw: records(helloMsg(sni, ext{extECHLegacy, randomBytes(40)}), 1<<14), want: ECHRefused},
		{name: "ech_outer_extensions", raw: records(helloMsg(sni, ext{extECHOuter, []byte{2, 0, 10}}), 1<<14), want: ECHRefused, tlsPasses: true},
		{name: "not TLS: HTTP", raw: []byte("GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n"), want: NotTLS},
		{name: "not TLS: SSH banner", raw: []byte("SSH-2.0-OpenSSH_9.2\r\n"), want: NotTLS},
		{name: "not TLS: SSLv2 hello", raw: []byte{0x80, 0x2e, 0x01, 0x03, 0x01, 0, 0x15, 0, 0, 0, 0x10}, want: NotTLS},
		{name: "not TLS: application data first", raw: []byte{23, 3, 3, 0, 5, 1, 2, 3, 4, 5}, want: NotTLS},
		{name: "server_hello instead", raw: records(append([]byte{2}, handshakeOf(t, real)[1:]...), 1<<14), want: BadHello},
		{name: "alert inside the hello", raw: append(records(realMsg[:10], 10), alertRecord(0)...), want: BadHello},
		{name: "zero-length record", raw: []byte{22, 3, 1, 0, 0}, want: BadHello},
		{name: "record over 16 KiB", raw: []byte{22, 3, 1, 0x40, 0x01}, want: BadHello},
		{name: "handshake bytes after the hello", raw: records(append(append([]byte(nil), realMsg...), 20, 0, 0, 0), 1<<14), want: BadHello},
		{name: "extensions block too short", raw: records(truncateExts(helloMsg(sni)), 1<<14), want: BadHello},
		// Our parser does not look inside supported_versions; crypto/tls does and refuses an
		// empty list, so this case passes only if the second check runs.
		{name: "malformed supported_versions (crypto/tls check)", raw: records(helloMsg(sni, ext{0x002b, []byte{0}}), 1<<14), want: BadHello, oursPasses: true},
		{name: "agent closes mid-hello", raw: real[:20], closeMid: true, want: BadHello},
	}
}

// truncateExts shortens the extensions' declared length by one, leaving a stray byte.
func truncateExts(msg []byte) []byte {
	m := append([]byte(nil), msg...)
	// legacy_version 2, random 32, session id 1+32, suites 2+4, compression 1+1.
	off := 4 + 2 + 32 + 33 + 6 + 2
	m[off+1]--
	return m
}

// TestCheckHello runs every case through the parser pair alone (H6).
func TestCheckHello(t *testing.T) {
	for _, c := range helloCases(t) {
		t.Run(c.name, func(t *testing.T) {
			raw, ref := checkHello(bytes.NewReader(c.raw), "pypi.org")
			got := reasons.Code("")
			if ref != nil {
				got = ref.code
			}
			if got != c.want {
				t.Fatalf("checkHello(%s) = %q (%v), want %q", c.name, got, ref, c.want)
			}
			if c.want == "" && !bytes.Equal(raw, c.raw) {
				t.Fatalf("checkHello(%s) recorded %d bytes, want the %d sent", c.name, len(raw), len(c.raw))
			}
		})
	}
}

// TestHelloChecksEachRefuse: each of the two hello checks refuses on its own (H6, fail closed
// twice), so removing either one fails a case here even where the other still stops the hello
// in TestCheckHello. Our parser names the reason; crypto/tls only has to refuse.
func TestHelloChecksEachRefuse(t *testing.T) {
	for _, c := range helloCases(t) {
		raw, body, ref := readClientHello(bytes.NewReader(c.raw))
		if ref != nil {
			continue // refused while reading the records: neither check runs
		}
		t.Run(c.name, func(t *testing.T) {
			ours, tls := inspectHello(body, "pypi.org"), checkHelloWithTLS(raw, "pypi.org")
			wantOurs := c.want
			if c.oursPasses {
				wantOurs = ""
			}
			got := reasons.Code("")
			if ours != nil {
				got = ours.code
			}
			if got != wantOurs {
				t.Errorf("inspectHello(%s) = %q (%v), want %q", c.name, got, ours, wantOurs)
			}
			if wantTLS := c.want != "" && !c.tlsPasses; (tls != nil) != wantTLS {
				t.Errorf("checkHelloWithTLS(%s) = %v, want a refusal: %v", c.name, tls, wantTLS)
			}
		})
	}
}
