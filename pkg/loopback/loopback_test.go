package loopback

import (
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestPairHoldsBothLoopbacks (M1, S2): with real sockets on this host's loopback, the pair's
// port is the owner's on 127.0.0.1 and held on ::1: another program cannot listen on
// [::1]:PORT, and a connection there is closed without a byte. Closed, the port is free.
func TestPairHoldsBothLoopbacks(t *testing.T) {
	p, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	if p.Held == nil {
		t.Fatal("this host has ::1 (the test machines do), but the pair holds nothing there")
	}
	addr6 := net.JoinHostPort("::1", strconv.Itoa(p.Port))
	if ln, err := net.Listen("tcp6", addr6); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		if ln != nil {
			ln.Close()
		}
		t.Fatalf("another listener on %s = %v, want EADDRINUSE", addr6, err)
	}
	c, err := net.DialTimeout("tcp6", addr6, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr6, err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("read from the held side = %d, %v; want 0 and EOF (closed at once)", n, err)
	}
	c.Close()
	go func() {
		if c, err := p.Listener.Accept(); err == nil {
			c.Write([]byte("ok"))
			c.Close()
		}
	}()
	c4, err := net.DialTimeout("tcp4", p.Listener.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial the owner's side: %v", err)
	}
	b, _ := io.ReadAll(c4)
	c4.Close()
	if string(b) != "ok" {
		t.Fatalf("the owner's side answered %q, want its own answer", b)
	}
	p.Close()
	ln, err := net.Listen("tcp6", addr6)
	if err != nil {
		t.Fatalf("after Close, listen on %s: %v", addr6, err)
	}
	ln.Close()
}

// TestPairSkipsAPortTakenOnIPv6 (M1): a port whose ::1 side another program holds is never
// handed out: Listen gives it back and takes another. The first port 127.0.0.1 offers is
// made one whose ::1 side this test holds.
func TestPairSkipsAPortTakenOnIPv6(t *testing.T) {
	other, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	taken := other.Addr().(*net.TCPAddr).Port
	offered := 0
	listenV4 = func() (net.Listener, error) {
		offered++
		if offered == 1 {
			return net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(taken)))
		}
		return net.Listen("tcp4", "127.0.0.1:0")
	}
	defer func() { listenV4 = func() (net.Listener, error) { return net.Listen("tcp4", "127.0.0.1:0") } }()
	p, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if offered < 2 || p.Port == taken || p.Held == nil {
		t.Fatalf("Listen = port %d (held on ::1: %v) after %d offers; want a second port, not %d", p.Port, p.Held != nil, offered, taken)
	}
	// The port given back is free again on 127.0.0.1.
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(taken)))
	if err != nil {
		t.Fatalf("the port given back is still held on 127.0.0.1: %v", err)
	}
	ln.Close()
}
