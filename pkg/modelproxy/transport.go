package modelproxy

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"time"

	"anet.dev/anet/pkg/dialer"
)

// NewTransport returns the transport for model upstreams: TLS verified against roots (nil:
// the system store, which honours SSL_CERT_FILE — E11), HTTP/2 where the server offers it, no
// proxy whatever the environment says (H7), no transparent compression (E8: identity upstream).
func NewTransport(roots *x509.CertPool) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.Dial,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 10 * time.Minute,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   8,
		DisableCompression:    true,
	}
}
