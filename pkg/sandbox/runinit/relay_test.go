package runinit

import (
	"bufio"
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// pipeUpstream hands out one end of an in-memory pipe per connection, as a VM guest's
// multiplexed stream would: no unix socket, no half-close.
type pipeUpstream chan net.Conn

func (p pipeUpstream) Open(context.Context) (net.Conn, error) {
	a, b := net.Pipe()
	p <- b
	return a, nil
}

func startRelay(t *testing.T, up Upstream) string {
	t.Helper()
	ln, err := ListenLoopback(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go Relay(ln, up, t.Logf)
	return ln.Addr().String()
}

// The bridge relays a loopback connection to whatever stream the Upstream gives, both ways.
func TestRelayOverAnyStream(t *testing.T) {
	streams := make(pipeUpstream, 1)
	addr := startRelay(t, streams)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	var host net.Conn
	select {
	case host = <-streams:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay opened no stream for the connection")
	}
	defer host.Close()
	host.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(host).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("endpoint side read %q, %v; want the agent's line", line, err)
	}
	if _, err := host.Write([]byte("pong\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "pong\n" {
		t.Fatalf("agent side read %q, %v; want the endpoint's line", line, err)
	}
}

// Over a unix socket the agent's half-close reaches the endpoint, which still answers after it
// (an HTTP/1.0 body, a CONNECT tunnel's last bytes).
func TestRelayHalfCloseToUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "endpoint.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c) // until the agent half-closes
		c.Write([]byte("endpoint got: " + string(b)))
	}()
	addr := startRelay(t, UnixSocket(sock))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("hello"))
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "endpoint got: hello" {
		t.Fatalf("through the relay: %q, %v; want %q", got, err, "endpoint got: hello")
	}
}
