package peer

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"time"

	"anet.dev/anet/pkg/identity"
)

// ALPN is the application protocol both sides must agree on.
const ALPN = "anet/1"

// KeyHolder is what the transport needs of the node identity: its aid and a crypto.Signer
// for the TLS certificate (identity.Identity.Signer never exposes the key bytes).
type KeyHolder interface {
	AID() string
	Signer() crypto.Signer
	Sign(msg []byte) []byte
	Public() ed25519.PublicKey
}

// certificate makes a fresh self-signed certificate for the node key. Only the key
// matters to a peer; names and dates are informational and not checked.
func certificate(id KeyHolder) (tls.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("peer certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: id.AID()},
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	s := id.Signer()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, s.Public(), s)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("peer certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: s}, nil
}

// PeerAID checks a peer's certificate list and returns the aid of its key: exactly one
// certificate, an Ed25519 key, signed by that same key. The TLS 1.3 CertificateVerify
// message (checked by crypto/tls) proves the peer holds the private key.
func PeerAID(rawCerts [][]byte) (string, error) {
	if len(rawCerts) != 1 {
		return "", fmt.Errorf("peer certificate: %d certificates, want exactly 1 (self-signed)", len(rawCerts))
	}
	c, err := x509.ParseCertificate(rawCerts[0])
	if err != nil {
		return "", fmt.Errorf("peer certificate: %w", err)
	}
	pub, ok := c.PublicKey.(ed25519.PublicKey)
	if !ok || c.PublicKeyAlgorithm != x509.Ed25519 {
		return "", fmt.Errorf("peer certificate: key is %v, want Ed25519", c.PublicKeyAlgorithm)
	}
	if c.SignatureAlgorithm != x509.PureEd25519 {
		return "", fmt.Errorf("peer certificate: signed with %v, want Ed25519", c.SignatureAlgorithm)
	}
	if err := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
		return "", fmt.Errorf("peer certificate: not self-signed by its key: %w", err)
	}
	return identity.AIDFromPublicKey(pub), nil
}

func baseConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{ALPN},
	}
}

// serverConfig requires a client certificate and checks it with PeerAID; the aid is read
// from the connection state after the handshake. A client that offers no ALPN at all gets
// the no_application_protocol alert (crypto/tls sends it itself only when the client offers
// other protocols; with none offered it would go on, and the check in VerifyConnection could
// only answer bad_certificate).
func serverConfig(cert tls.Certificate) *tls.Config {
	c := baseConfig(cert)
	c.ClientAuth = tls.RequireAnyClientCert
	c.GetConfigForClient = func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		if len(chi.SupportedProtos) > 0 {
			return nil, nil
		}
		if a, ok := chi.Conn.(alerter); ok {
			a.alert(alertNoApplicationProtocol)
		}
		return nil, fmt.Errorf("peer: client offered no ALPN; want %q", ALPN)
	}
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if cs.NegotiatedProtocol != ALPN {
			return fmt.Errorf("peer: client did not offer ALPN %q", ALPN)
		}
		_, err := PeerAID(rawOf(cs))
		return err
	}
	return c
}

// ErrWrongAID is wrapped when a dialled node's key is not the expected aid.
var ErrWrongAID = errors.New("the node at this address holds a different key")

// clientConfig accepts only a server whose certificate is valid for PeerAID and whose aid is
// want. There is no CA: InsecureSkipVerify turns off only crypto/tls's chain and host name
// checks, which cannot apply to a key-addressed peer; VerifyConnection below is the
// complete check and runs on every handshake (tested with an impostor key).
func clientConfig(cert tls.Certificate, want string) *tls.Config {
	c := baseConfig(cert)
	c.InsecureSkipVerify = true
	c.ServerName = "anet"
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		got, err := PeerAID(rawOf(cs))
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%w: got %s, want %s", ErrWrongAID, got, want)
		}
		if cs.NegotiatedProtocol != ALPN {
			return fmt.Errorf("peer: server did not select ALPN %q", ALPN)
		}
		return nil
	}
	return c
}

func rawOf(cs tls.ConnectionState) [][]byte {
	out := make([][]byte, len(cs.PeerCertificates))
	for i, c := range cs.PeerCertificates {
		out[i] = c.Raw
	}
	return out
}
