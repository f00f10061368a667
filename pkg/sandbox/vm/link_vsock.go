package vm

import (
	"fmt"
	"net"

	"github.com/mdlayher/vsock"
)

// Vsock transport: one vsock connection per stream, guest to host (CID 2), on the run's own
// port (on the guest's command line). It
// needs vhost-vsock on the host (a KVM host with /dev/vhost-vsock); the host side listens
// with mdlayher/vsock and accepts only connections from the run's own guest CID, because a
// host vsock port is reachable from every guest of the host.
//
// Never open an AF_VSOCK socket on a machine whose vsock belongs to its own management (the
// CI and development machines of this project are such guests): the constructors take the
// dialer and listener so the transport is tested through net.Conn pairs, and only the
// launcher passes real vsock ones on a host whose probe found vhost-vsock.

// NewVsockGuest returns the guest end; dial opens one connection to the host's port
// (vsock.Dial(vsock.Host, port, nil) in the guest).
func NewVsockGuest(dial func() (net.Conn, error)) GuestLink { return vsockGuest{dial} }

type vsockGuest struct{ dial func() (net.Conn, error) }

func (g vsockGuest) Open(k Kind) (net.Conn, error) {
	c, err := g.dial()
	if err != nil {
		return nil, fmt.Errorf("link: vsock dial: %w", err)
	}
	return writeKind(c, k)
}

func (g vsockGuest) Close() error { return nil }

// NewVsockHost returns the host end over ln (vsock.Listen(port, nil) on the host),
// accepting only connections whose peer is guest CID cid.
func NewVsockHost(ln net.Listener, cid uint32) HostLink { return vsockHost{ln, cid} }

type vsockHost struct {
	ln  net.Listener
	cid uint32
}

// ErrForeignCID is returned by Accept for a connection from another guest.
var ErrForeignCID = fmt.Errorf("link: vsock connection from a foreign guest")

func (h vsockHost) Accept() (Kind, net.Conn, error) {
	c, err := h.ln.Accept()
	if err != nil {
		return 0, nil, fmt.Errorf("link: accept: %w", err)
	}
	a, ok := c.RemoteAddr().(*vsock.Addr)
	if !ok || a.ContextID != h.cid {
		c.Close()
		return 0, nil, fmt.Errorf("%w (%v, want cid %d)", ErrForeignCID, c.RemoteAddr(), h.cid)
	}
	return readKind(c)
}

func (h vsockHost) Close() error { return h.ln.Close() }
