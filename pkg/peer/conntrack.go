package peer

import (
	"net"
	"sync/atomic"

	"anet.dev/anet/pkg/peer/admission"
)

// trackedConn is an accepted connection as admission sees it: it tells the table when the
// first byte arrives (a half-open connection is one that never speaks), and it can end a
// handshake with a TLS alert of its own choosing.
type trackedConn struct {
	net.Conn
	id    admission.ID
	src   admission.Source
	table *admission.Table

	heard         atomic.Bool
	authenticated atomic.Bool
	class         atomic.Uint32 // the key's admission.Class, set before authenticated
	evicted       atomic.Bool   // closed by admission (already counted)
	muted         atomic.Bool   // after alert: crypto/tls's own alert is not sent
}

// className is the key's class once the connection authenticated, else Unauthenticated.
func (c *trackedConn) className() string {
	if !c.authenticated.Load() {
		return Unauthenticated
	}
	return admission.Class(c.class.Load()).String()
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.heard.Load() {
		c.heard.Store(true)
		c.table.Heard(c.id)
	}
	return n, err
}

func (c *trackedConn) Write(p []byte) (int, error) {
	if c.muted.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// TLS alert description codes (RFC 8446 section 6).
const alertNoApplicationProtocol = 120

// alert sends a fatal TLS alert in a plaintext record (the handshake has not reached
// encryption) and mutes the connection, so the alert crypto/tls would send after it (it can
// only send internal_error from GetConfigForClient) never reaches the client.
func (c *trackedConn) alert(description byte) {
	// content type alert (21), legacy version TLS 1.2, length 2, level fatal (2), description
	c.Conn.Write([]byte{21, 3, 3, 0, 2, 2, description})
	c.muted.Store(true)
}

// alerter is a connection that can send its own TLS alert.
type alerter interface{ alert(description byte) }
