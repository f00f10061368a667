//go:build anettest

package egress

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/dialer"
)

// Benchmarks for `make bench`: tunnel throughput and set-up time through the egress proxy,
// next to a direct loopback connection and a minimal io.Copy relay measured in the same run.
// Each group logs the ratios against the direct baseline.

const benchChunk = 1 << 20

// benchServer is a loopback TCP server: after skipping `skip` bytes (the replayed hello) it
// reads an 8-byte count n; for upload it then reads until EOF, for download it writes n
// chunks; then it closes.
func benchServer(b *testing.B, skip int, download bool) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	b.Cleanup(func() { ln.Close() })
	chunk := make([]byte, benchChunk)
	testkit.Serve(ln, func(c net.Conn) {
		var hdr [8]byte
		if _, err := io.CopyN(io.Discard, c, int64(skip)); err != nil {
			return
		}
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		if !download {
			io.Copy(io.Discard, c)
			return
		}
		for range binary.BigEndian.Uint64(hdr[:]) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	return ln.Addr().String()
}

// relay is the minimal io.Copy relay baseline.
func relay(b *testing.B, to string) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	b.Cleanup(func() { ln.Close() })
	testkit.Serve(ln, func(c net.Conn) {
		u, err := net.Dial("tcp", to)
		if err != nil {
			return
		}
		defer u.Close()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); wg.Done() }()
		go func() { io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); wg.Done() }()
		wg.Wait()
	})
	return ln.Addr().String()
}

// benchProxy is an egress proxy with limits out of the way, tunnelling pypi.org to `to`.
func benchProxy(b *testing.B, to string) string { return benchProxyOn(b, to, "tcp") }

// benchProxyOn serves the proxy on "tcp" (returns host:port) or "unix" (returns a path), the
// latter being how pkg/endpoint serves a run.
func benchProxyOn(b *testing.B, to, network string) string {
	b.Helper()
	dialer.AnetTestRedirect(pypiIP+":443", to)
	b.Cleanup(func() { dialer.AnetTestRedirect(pypiIP+":443", "") })
	p, err := NewProxy(Policy{Allow: []string{"pypi.org"}, Limits: Limits{
		OpenTunnels: 1 << 20, TotalTunnels: 1 << 30, SentBytes: 1 << 60, ReceivedBytes: 1 << 60,
	}}, Options{Resolver: staticResolver{"pypi.org": addrs(pypiIP)}, Logger: discardLogger()})
	if err != nil {
		b.Fatalf("NewProxy: %v", err)
	}
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(b.TempDir(), "endpoint.sock")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(ln)
	b.Cleanup(func() { p.Close(); srv.Close() })
	return ln.Addr().String()
}

// dialTunnel opens a CONNECT tunnel and returns the raw connection.
func dialTunnel(b *testing.B, proxy string) net.Conn {
	network := "tcp"
	if strings.HasPrefix(proxy, "/") {
		network = "unix"
	}
	c, err := net.Dial(network, proxy)
	if err != nil {
		b.Fatalf("dial proxy: %v", err)
	}
	io.WriteString(c, connectHead("pypi.org"))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK || br.Buffered() != 0 {
		b.Fatalf("CONNECT = %v, %v", resp, err)
	}
	return c
}

type benchResults struct {
	mu sync.Mutex
	ns map[string]float64
}

func (r *benchResults) record(b *testing.B, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ns[name] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
}

func (r *benchResults) logRatios(b *testing.B, throughput bool, names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	base := r.ns["direct"]
	for _, n := range names {
		if base > 0 && r.ns[n] > 0 {
			if throughput {
				b.Logf("%s: throughput %.0f%% of direct", n, 100*base/r.ns[n])
			} else {
				b.Logf("%s: set-up takes %.2fx direct (+%.0f µs)", n, r.ns[n]/base, (r.ns[n]-base)/1e3)
			}
		}
	}
}

func benchThroughput(b *testing.B, download bool) {
	hello := goHelloB(b)
	res := &benchResults{ns: map[string]float64{}}
	run := func(name string, skip int, dial func(up string) net.Conn, target func(up string) string) {
		b.Run(name, func(b *testing.B) {
			up := benchServer(b, skip, download)
			addr := target(up)
			b.SetBytes(benchChunk)
			b.ResetTimer()
			c := dial(addr)
			var hdr [8]byte
			binary.BigEndian.PutUint64(hdr[:], uint64(b.N))
			c.Write(hdr[:])
			if download {
				n, err := io.Copy(io.Discard, c)
				if err != nil || n != int64(b.N)*benchChunk {
					b.Fatalf("downloaded %d bytes, %v; want %d", n, err, b.N*benchChunk)
				}
			} else {
				chunk := make([]byte, benchChunk)
				for range b.N {
					if _, err := c.Write(chunk); err != nil {
						b.Fatalf("write: %v", err)
					}
				}
				c.(interface{ CloseWrite() error }).CloseWrite()
				io.Copy(io.Discard, c) // the server closes once it has read everything
			}
			b.StopTimer()
			c.Close()
			res.record(b, name)
		})
	}
	plain := func(addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatalf("dial: %v", err)
		}
		return c
	}
	run("direct", 0, plain, func(up string) string { return up })
	run("iocopy-relay", 0, plain, func(up string) string { return relay(b, up) })
	run("egress", len(hello), func(addr string) net.Conn {
		c := dialTunnel(b, addr)
		c.Write(hello)
		return c
	}, func(up string) string { return benchProxy(b, up) })
	run("egress-unix-endpoint", len(hello), func(addr string) net.Conn {
		c := dialTunnel(b, addr)
		c.Write(hello)
		return c
	}, func(up string) string { return benchProxyOn(b, up, "unix") })
	res.logRatios(b, true, "iocopy-relay", "egress", "egress-unix-endpoint")
}

// BenchmarkTunnelUpload: bytes from the agent to the upstream.
func BenchmarkTunnelUpload(b *testing.B) { benchThroughput(b, false) }

// BenchmarkTunnelDownload: bytes from the upstream to the agent.
func BenchmarkTunnelDownload(b *testing.B) { benchThroughput(b, true) }

// BenchmarkTunnelSetup: from dial to a completed TLS 1.3 handshake with the upstream.
func BenchmarkTunnelSetup(b *testing.B) {
	ca := theCA(b)
	srvCfg := &tls.Config{Certificates: []tls.Certificate{ca.Cert}}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srvCfg)
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	b.Cleanup(func() { ln.Close() })
	testkit.Serve(ln, func(c net.Conn) {
		c.(*tls.Conn).Handshake()
		c.Write([]byte{1})
		io.Copy(io.Discard, c)
	})
	up := ln.Addr().String()
	cfg := &tls.Config{ServerName: "pypi.org", RootCAs: ca.Pool}
	handshake := func(b *testing.B, c net.Conn) {
		tc := tls.Client(c, cfg)
		var one [1]byte
		if _, err := io.ReadFull(tc, one[:]); err != nil {
			b.Fatalf("handshake and first byte: %v", err)
		}
		tc.Close()
	}
	res := &benchResults{ns: map[string]float64{}}
	run := func(name string, target string, dial func(b *testing.B, addr string) net.Conn) {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				handshake(b, dial(b, target))
			}
			res.record(b, name)
		})
	}
	plain := func(b *testing.B, addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatalf("dial: %v", err)
		}
		return c
	}
	run("direct", up, plain)
	run("iocopy-relay", relay(b, up), plain)
	run("egress", benchProxy(b, up), dialTunnel)
	res.logRatios(b, false, "iocopy-relay", "egress")
}

func goHelloB(b *testing.B) []byte {
	c := &captureConn{}
	tls.Client(c, &tls.Config{ServerName: "pypi.org"}).Handshake()
	return c.buf.Bytes()
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
