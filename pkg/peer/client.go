package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Client dials peers with the node's certificate.
type Client struct {
	id    KeyHolder
	cert  tls.Certificate
	local netip.Addr // source address of dials; zero lets the system choose
}

// NewClient makes a client for the node key.
func NewClient(id KeyHolder) (*Client, error) {
	cert, err := certificate(id)
	if err != nil {
		return nil, err
	}
	return &Client{id: id, cert: cert}, nil
}

// From returns a copy of c that dials from the local address ip: a host with several
// addresses can reach peers from the one they know it by (admission vouches for sources,
// not keys, before the handshake); tests play many hosts with it.
func (c *Client) From(ip netip.Addr) *Client {
	cp := *c
	cp.local = ip
	return &cp
}

// Conn is an authenticated connection to one peer.
type Conn struct {
	tc   *tls.Conn
	peer string
}

// dialTimeout bounds the TCP connect and the TLS handshake.
const dialTimeout = 10 * time.Second

// Dial connects to addr and completes mutual TLS; the server's key must be want's.
func (c *Client) Dial(ctx context.Context, addr, want string) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	// Peers are reached directly: a proxy setting in the environment is not consulted (H7).
	d := &net.Dialer{}
	if c.local.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: c.local.AsSlice()}
	}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial peer %s at %s: %w", want, addr, err)
	}
	tc := tls.Client(raw, clientConfig(c.cert, want))
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		if errors.Is(err, ErrWrongAID) {
			return nil, &RefusedError{Code: CodeWrongAID, Detail: err.Error()}
		}
		return nil, fmt.Errorf("dial peer %s at %s: tls: %w", want, addr, err)
	}
	return &Conn{tc: tc, peer: want}, nil
}

// PeerAID is the authenticated aid of the other side.
func (c *Conn) PeerAID() string { return c.peer }

// Send delivers one signed message and returns the peer's ack.
func (c *Conn) Send(m SignedMessage) (Ack, error) { return c.SendRaw(m.Raw()) }

// SendRaw sends payload as one frame and reads the ack. It exists so tests can send what a
// faulty or hostile peer would.
func (c *Conn) SendRaw(payload []byte) (Ack, error) {
	c.tc.SetDeadline(time.Now().Add(2 * frameTimeout))
	if err := writeFrame(c.tc, payload); err != nil {
		return Ack{}, fmt.Errorf("send to %s: %w", c.peer, err)
	}
	return c.readAck()
}

// SendHeader writes only a frame header announcing n bytes and reads the ack; a test of
// the frame limit uses it.
func (c *Conn) SendHeader(n uint32) (Ack, error) {
	c.tc.SetDeadline(time.Now().Add(2 * frameTimeout))
	h := []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	if _, err := c.tc.Write(h); err != nil {
		return Ack{}, fmt.Errorf("send to %s: %w", c.peer, err)
	}
	return c.readAck()
}

func (c *Conn) readAck() (Ack, error) {
	data, err := readFrame(c.tc)
	if err != nil {
		return Ack{}, fmt.Errorf("read ack from %s: %w", c.peer, err)
	}
	return parseAck(data)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.tc.Close() }
