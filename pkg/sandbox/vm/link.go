package vm

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"github.com/hashicorp/yamux"
)

// The link joins the guest to the host. It carries streams, each opened by the guest and
// named by its first byte (Kind): the control stream, the agent's stdio, and one endpoint
// stream per connection the agent makes to 127.0.0.1:P. The host side never interprets what
// an endpoint stream carries: it relays it to the run's endpoint socket, where anet-egress
// applies every rule. Two transports implement the same pair of interfaces.

// Kind names what a stream carries.
type Kind byte

const (
	KindControl  Kind = 'c'
	KindStdin    Kind = 'i'
	KindStdout   Kind = 'o'
	KindStderr   Kind = 'e'
	KindEndpoint Kind = 'n'
)

func (k Kind) valid() bool {
	switch k {
	case KindControl, KindStdin, KindStdout, KindStderr, KindEndpoint:
		return true
	}
	return false
}

// GuestLink is the guest's end: it opens streams.
type GuestLink interface {
	Open(k Kind) (net.Conn, error)
	Close() error
}

// HostLink is the host's end: it accepts the guest's streams.
type HostLink interface {
	// Accept returns the next stream and its kind; an unknown kind is an error for that
	// stream only (it is closed), not for the link.
	Accept() (Kind, net.Conn, error)
	Close() error
}

// ErrBadKind is returned by Accept for a stream whose first byte names no kind, or that
// sends none; the link goes on accepting.
var ErrBadKind = errors.New("link: stream of unknown kind")

// headerTimeout bounds how long a new stream may take to name its kind.
const headerTimeout = 10 * time.Second

func writeKind(c net.Conn, k Kind) (net.Conn, error) {
	if _, err := c.Write([]byte{byte(k)}); err != nil {
		c.Close()
		return nil, fmt.Errorf("link: open %c: %w", k, err)
	}
	return c, nil
}

func readKind(c net.Conn) (Kind, net.Conn, error) {
	_ = c.SetReadDeadline(time.Now().Add(headerTimeout))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		c.Close()
		// A stream that never names its kind is that stream's failure, not the link's.
		return 0, nil, fmt.Errorf("%w: no header: %v", ErrBadKind, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	if k := Kind(b[0]); k.valid() {
		return k, c, nil
	}
	c.Close()
	return 0, nil, fmt.Errorf("%w %#x", ErrBadKind, b[0])
}

// Serial transport: one byte stream (a virtio-serial port in the guest, a unix socket QEMU
// connects to on the host) multiplexed by yamux. yamux is HashiCorp's stream multiplexer
// (Consul, Nomad, Vault and Terraform's plugins run on it): flow control per stream,
// half-close, and keepalives we switch off, because a paused TCG guest is not a dead one.
func yamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.EnableKeepAlive = false
	c.AcceptBacklog = 64
	c.ConnectionWriteTimeout = 30 * time.Second
	c.StreamOpenTimeout = 30 * time.Second
	c.LogOutput = nil
	c.Logger = log.New(io.Discard, "", 0)
	return c
}

// NewSerialGuest starts the guest end over rwc (the virtio-serial port).
func NewSerialGuest(rwc io.ReadWriteCloser) (GuestLink, error) {
	s, err := yamux.Client(rwc, yamuxConfig())
	if err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	return serialGuest{s}, nil
}

type serialGuest struct{ s *yamux.Session }

func (g serialGuest) Open(k Kind) (net.Conn, error) {
	c, err := g.s.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("link: open %c: %w", k, err)
	}
	return writeKind(streamConn{c}, k)
}

func (g serialGuest) Close() error { return g.s.Close() }

// NewSerialHost starts the host end over rwc (QEMU's connection to the link socket).
func NewSerialHost(rwc io.ReadWriteCloser) (HostLink, error) {
	s, err := yamux.Server(rwc, yamuxConfig())
	if err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	return serialHost{s}, nil
}

type serialHost struct{ s *yamux.Session }

func (h serialHost) Accept() (Kind, net.Conn, error) {
	c, err := h.s.AcceptStream()
	if err != nil {
		return 0, nil, fmt.Errorf("link: accept: %w", err)
	}
	return readKind(streamConn{c})
}

func (h serialHost) Close() error { return h.s.Close() }

// streamConn gives a yamux stream the CloseWrite the relay uses for half-close: yamux's
// Close sends FIN and keeps reading until the peer's.
type streamConn struct{ *yamux.Stream }

func (s streamConn) CloseWrite() error { return s.Stream.Close() }
