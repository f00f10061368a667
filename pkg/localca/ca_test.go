package localca

import (
	"crypto/tls"
	"strings"
	"testing"
)

// The CA's leaf verifies for each of its names and 127.0.0.1 against Pool, and for no other.
func TestCA(t *testing.T) {
	ca, err := New("a.example", "b.example")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{ca.Cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.(*tls.Conn).Handshake()
			}()
		}
	}()
	for name, ok := range map[string]bool{"a.example": true, "b.example": true, "127.0.0.1": true, "c.example": false} {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool, ServerName: name})
		if c != nil {
			c.Close()
		}
		if (err == nil) != ok {
			t.Errorf("handshake for %s: %v, want success %v", name, err, ok)
		}
	}
	if !strings.HasPrefix(string(ca.PEM), "-----BEGIN CERTIFICATE-----") {
		t.Errorf("PEM = %.40q, want a PEM certificate", ca.PEM)
	}
	if _, err := New(); err == nil {
		t.Error("New() with no name succeeded")
	}
}
