package vm

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mdlayher/vsock"
	"golang.org/x/sys/unix"
)

// unixPair is a connected pair of real stream sockets (what QEMU's chardev and the guest's
// port amount to for the serial transport). A socketpair, not a listener in a temp dir: the
// fuzz targets make one per input. (No SOCK_CLOEXEC: the package also builds on macOS, which
// lacks it, and a test starts no program that could inherit the fds.)
func unixPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "link")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return conns[0], conns[1]
}

// exerciseLink opens streams of every kind from the guest end and checks the host end sees
// each kind, data both ways, and half-close (the relay's HTTP/1.0 and CONNECT need it).
func exerciseLink(t *testing.T, g GuestLink, h HostLink) {
	t.Helper()
	kinds := []Kind{KindControl, KindStdout, KindEndpoint, KindEndpoint}
	var wg sync.WaitGroup
	for _, k := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := g.Open(k)
			if err != nil {
				t.Errorf("Open(%c): %v", k, err)
				return
			}
			defer c.Close()
			c.Write([]byte("ping " + string(rune(k))))
			c.(interface{ CloseWrite() error }).CloseWrite()
			b, err := io.ReadAll(c)
			if err != nil || string(b) != "pong "+string(rune(k)) {
				t.Errorf("stream %c: read %q, %v", k, b, err)
			}
		}()
	}
	seen := map[Kind]int{}
	for range kinds {
		k, c, err := h.Accept()
		if err != nil {
			t.Fatalf("Accept: %v", err)
		}
		seen[k]++
		go func() {
			defer c.Close()
			b, err := io.ReadAll(c) // ends at the guest's half-close
			if err != nil || string(b) != "ping "+string(rune(k)) {
				t.Errorf("host stream %c: read %q, %v", k, b, err)
			}
			c.Write([]byte("pong " + string(rune(k))))
			c.(interface{ CloseWrite() error }).CloseWrite()
		}()
	}
	wg.Wait()
	if seen[KindControl] != 1 || seen[KindStdout] != 1 || seen[KindEndpoint] != 2 {
		t.Fatalf("host saw %v", seen)
	}
}

// TestSerialLinkCarriesStreams: the virtio-serial transport, yamux over one stream (V1).
func TestSerialLinkCarriesStreams(t *testing.T) {
	a, b := unixPair(t)
	g, err := NewSerialGuest(a)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h, err := NewSerialHost(b)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	exerciseLink(t, g, h)
}

// TestSerialLinkRefusesUnknownKind: a stream that names no kind is closed, and the link goes
// on accepting the next one.
func TestSerialLinkRefusesUnknownKind(t *testing.T) {
	a, b := unixPair(t)
	g, _ := NewSerialGuest(a)
	defer g.Close()
	h, _ := NewSerialHost(b)
	defer h.Close()
	bad, err := g.Open(Kind('x'))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, _, err := h.Accept(); !errors.Is(err, ErrBadKind) {
		t.Fatalf("Accept of kind 'x' = %v, want ErrBadKind", err)
	}
	if _, err := g.Open(KindStderr); err != nil {
		t.Fatal(err)
	}
	if k, _, err := h.Accept(); err != nil || k != KindStderr {
		t.Fatalf("next Accept = %c, %v; want the stderr stream", k, err)
	}
}

// vsockConn is a net.Conn whose peer address is a vsock address: the vsock transport is
// tested through its interface, never with a real AF_VSOCK socket (the host's vsock belongs
// to the machine's management).
type vsockConn struct {
	net.Conn
	cid uint32
}

func (c vsockConn) RemoteAddr() net.Addr { return &vsock.Addr{ContextID: c.cid, Port: 1234} }

func (c vsockConn) CloseWrite() error { return c.Conn.(interface{ CloseWrite() error }).CloseWrite() }

// pairListener hands out the host ends of pairs the guest's dial makes.
type pairListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *pairListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}
func (l *pairListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pairListener) Addr() net.Addr { return &vsock.Addr{ContextID: 2, Port: 5000} }

func vsockPair(t testing.TB, guestCID uint32) (GuestLink, *pairListener) {
	ln := &pairListener{conns: make(chan net.Conn, 8), closed: make(chan struct{})}
	g := NewVsockGuest(func() (net.Conn, error) {
		a, b := unixPair(t)
		ln.conns <- vsockConn{b, guestCID}
		return a, nil
	})
	return g, ln
}

// TestVsockLinkCarriesStreams: the vsock transport through its interface (V1).
func TestVsockLinkCarriesStreams(t *testing.T) {
	g, ln := vsockPair(t, 7)
	h := NewVsockHost(ln, 7)
	defer h.Close()
	exerciseLink(t, g, h)
}

// TestVsockLinkRefusesForeignGuest: a host vsock port is reachable from every guest of the
// host; the run's link accepts only its own guest's CID.
func TestVsockLinkRefusesForeignGuest(t *testing.T) {
	g, ln := vsockPair(t, 8)
	h := NewVsockHost(ln, 7)
	defer h.Close()
	c, err := g.Open(KindEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := h.Accept(); !errors.Is(err, ErrForeignCID) {
		t.Fatalf("Accept from cid 8 on cid 7's link = %v, want ErrForeignCID", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the foreign guest's connection stayed open")
	}
}
