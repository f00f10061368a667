// Package localca is a throw-away certificate authority on the local machine: one CA and one
// leaf, made in memory for a day, for a stand-in service that clients reach over real TLS
// (anet-egress's self-test battery, anet-demo's stand-in model service, and the tests). Clients
// trust it through an explicit pool or SSL_CERT_FILE; TLS is never switched off. It is a
// product package, not a test helper: release binaries link it.
package localca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Authority is a throw-away certificate authority with one leaf certificate. Clients trust it
// through an explicit pool (Pool) or, outside Go, through SSL_CERT_FILE holding PEM.
type Authority struct {
	Pool *x509.CertPool
	// Cert is the leaf, for a server's tls.Config.
	Cert tls.Certificate
	// PEM is the CA certificate.
	PEM []byte
}

// New makes a CA and a leaf valid for names and 127.0.0.1, for a day.
func New(names ...string) (*Authority, error) {
	if len(names) == 0 {
		return nil, errors.New("local ca: no name for the leaf")
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("local ca: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "anet test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("local ca: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("local ca: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("local ca: %w", err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: names, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("local ca: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &Authority{
		Pool: pool,
		Cert: tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey},
		PEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}, nil
}
