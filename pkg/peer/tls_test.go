package peer

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

func selfSigned(t *testing.T, pub, signer any) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// PeerAID accepts exactly one self-signed Ed25519 certificate and names its key's aid.
func TestPeerAID(t *testing.T) {
	a, c := newSeedKey(1), newSeedKey(3)
	good, err := certificate(a)
	if err != nil {
		t.Fatal(err)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tc := range []struct {
		name  string
		certs [][]byte
		want  string // aid, or the error text
		ok    bool
	}{
		{"node certificate", good.Certificate, a.AID(), true},
		{"none", nil, "0 certificates", false},
		{"two", [][]byte{good.Certificate[0], good.Certificate[0]}, "2 certificates", false},
		{"garbage", [][]byte{[]byte("not a certificate")}, "peer certificate", false},
		{"ecdsa key", [][]byte{selfSigned(t, &ec.PublicKey, ec)}, "want Ed25519", false},
		// A's public key in a certificate signed by C: the impostor cannot sign as A.
		{"key of A signed by C", [][]byte{selfSigned(t, a.Public(), c.priv)}, "not self-signed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PeerAID(tc.certs)
			if tc.ok {
				if err != nil || got != tc.want {
					t.Fatalf("PeerAID() = %q, %v, want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PeerAID() = %q, %v, want an error containing %q", got, err, tc.want)
			}
		})
	}
}

// The dialling side refuses a server whose key is not the expected aid (an impostor at
// the peer's address), over a real TLS handshake.
func TestDialRefusesWrongServerKey(t *testing.T) {
	b := newTestNode(t, 2, Options{})
	b.listen(t)
	a := newSeedKey(1)
	cl, err := NewClient(a)
	if err != nil {
		t.Fatal(err)
	}
	want := newSeedKey(9).AID() // A believes B's address belongs to node 9
	_, err = cl.Dial(context.Background(), b.addr, want)
	var re *RefusedError
	if !errors.As(err, &re) || re.Code != CodeWrongAID {
		t.Fatalf("Dial(B's address, aid of node 9) error = %v, want code %s", err, CodeWrongAID)
	}
	conn, err := cl.Dial(context.Background(), b.addr, b.key.AID())
	if err != nil {
		t.Fatalf("Dial(B's address, B's aid) error = %v", err)
	}
	conn.Close()
}

// The dialling side refuses a server that holds the right key but does not speak anet/1
// (no ALPN selected): another TLS service on the peer's key is not a peer listener.
func TestDialRefusesServerWithoutALPN(t *testing.T) {
	b := newSeedKey(2)
	bCert, err := certificate(b)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{bCert}, ClientAuth: tls.RequireAnyClientCert,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	testkit.Serve(l, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(waitLimit))
		c.(*tls.Conn).Handshake()
	})
	cl, err := NewClient(newSeedKey(1))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := cl.Dial(context.Background(), l.Addr().String(), b.AID())
	if err == nil {
		conn.Close()
		t.Fatal("Dial(server without ALPN) succeeded, want it refused")
	}
	if !strings.Contains(err.Error(), "did not select ALPN") {
		t.Fatalf("Dial(server without ALPN) error = %v, want it to name the missing ALPN", err)
	}
}

// The listener refuses clients without a certificate, with a non-Ed25519 one, with
// another node's certificate but the wrong private key, below TLS 1.3 or without ALPN; a
// client that offers no ALPN, or another protocol, reads the no_application_protocol alert.
func TestServerRefusesBadClients(t *testing.T) {
	logs := &syncBuffer{}
	b := newTestNode(t, 2, Options{Log: slog.New(slog.NewTextHandler(logs, nil))})
	b.listen(t)
	a, c := newSeedKey(1), newSeedKey(3)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	aCert, _ := certificate(a)
	cCert, _ := certificate(c)
	for _, tc := range []struct {
		name   string
		mutate func(*tls.Config)
		why    string // in the server's log line for the refusal
		alert  string // in the client's error, when the refusal is a specific alert
	}{
		{"no client certificate", func(cfg *tls.Config) { cfg.Certificates = nil }, "didn't provide a certificate", ""},
		{"ecdsa certificate", func(cfg *tls.Config) {
			cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{selfSigned(t, &ec.PublicKey, ec)}, PrivateKey: ec}}
		}, "want Ed25519", ""},
		// The impostor presents A's real certificate but holds only C's key.
		{"A's certificate with C's key", func(cfg *tls.Config) {
			cfg.Certificates = []tls.Certificate{{Certificate: aCert.Certificate, PrivateKey: c.priv}}
		}, "invalid signature by the client certificate", ""},
		{"TLS 1.2", func(cfg *tls.Config) { cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS12 }, "unsupported versions", ""},
		{"no ALPN", func(cfg *tls.Config) { cfg.NextProtos, cfg.VerifyConnection = nil, nil }, "offered no ALPN", "no application protocol"},
		{"other ALPN", func(cfg *tls.Config) { cfg.NextProtos, cfg.VerifyConnection = []string{"h2"}, nil }, "unsupported application protocols", "no application protocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := clientConfig(cCert, b.key.AID())
			tc.mutate(cfg)
			conn, err := tls.Dial("tcp", b.addr, cfg)
			if err == nil {
				// TLS 1.3 clients finish before the server checks the client's
				// certificate; the refusal arrives on the first read.
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				sm := task(t, a, b.key.AID(), "m-1", "ix-1", "hi", time.Now())
				writeFrame(conn, sm.Raw())
				_, err = readFrame(conn)
				conn.Close()
			}
			if err == nil {
				t.Fatalf("%s: connection served, want it refused", tc.name)
			}
			if tc.alert != "" && !strings.Contains(err.Error(), tc.alert) {
				t.Fatalf("%s: client error = %v, want the %q alert", tc.name, err, tc.alert)
			}
			if !testkit.Until(waitLimit, func() bool { return strings.Contains(logs.String(), tc.why) }) {
				t.Fatalf("%s: server log does not name the reason %q:\n%s", tc.name, tc.why, logs.String())
			}
			if n := len(b.inbox(t)); n != 0 {
				t.Fatalf("%s: inbox has %d rows, want 0", tc.name, n)
			}
		})
	}
}

// The package doc's claim and advice: the certificate is signed by its own key but is not a
// CA certificate, so an issuer check refuses it, and the embedded key verifies it.
func TestCertificateSelfSignedNotCA(t *testing.T) {
	cert, err := certificate(newSeedKey(1))
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if c.IsCA || !c.BasicConstraintsValid {
		t.Fatalf("IsCA = %v (constraints valid %v), want a certificate that says it is not a CA", c.IsCA, c.BasicConstraintsValid)
	}
	if err := c.CheckSignatureFrom(c); err == nil {
		t.Fatal("CheckSignatureFrom(itself) accepted the certificate; the doc says issuer checks refuse it")
	}
	if !ed25519.Verify(c.PublicKey.(ed25519.PublicKey), c.RawTBSCertificate, c.Signature) {
		t.Fatal("the embedded key does not verify the certificate's signature")
	}
}
