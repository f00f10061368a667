//go:build anettest

package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/reasons"
)

// Public addresses the fake resolvers hand out; AnetTestRedirect sends them to loopback
// fakes after every check has run (the release build has no such hook).
const (
	pypiIP   = "151.101.0.223"
	filesIP  = "151.101.64.223"
	pypiIPv6 = "2a04:4e42::223"
)

var (
	caOnce sync.Once
	ca     *localca.Authority
	caErr  error
)

// theCA is the throw-away CA, made once, with one leaf for the names the tests tunnel to.
func theCA(t testing.TB) *localca.Authority {
	t.Helper()
	caOnce.Do(func() { ca, caErr = localca.New("pypi.org", "files.pythonhosted.org", "xn--mnchen-3ya.de") })
	if caErr != nil {
		t.Fatal(caErr)
	}
	return ca
}

// tlsUpstream is a real HTTPS server on loopback that answers with the SNI it saw.
type tlsUpstream struct {
	addr  string
	conns atomic.Int32
}

func startTLSUpstream(t *testing.T) *tlsUpstream {
	t.Helper()
	u := &tlsUpstream{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s %s", r.TLS.ServerName, r.URL.Path)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{theCA(t).Cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused tunnels end handshakes early
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u.addr = srv.Listener.Addr().String()
	return u
}

// sink is a raw TCP upstream: it records what each connection sends and can send bytes back.
type sink struct {
	addr  string
	mu    sync.Mutex
	conns []*sinkConn
}

type sinkConn struct {
	c    net.Conn
	mu   sync.Mutex
	got  bytes.Buffer
	eof  atomic.Bool
	done chan struct{}
}

func (s *sinkConn) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.got.Bytes()...)
}

func (s *sinkConn) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.Len()
}

func startSink(t *testing.T) *sink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sink listen: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &sink{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			sc := &sinkConn{c: c, done: make(chan struct{})}
			s.mu.Lock()
			s.conns = append(s.conns, sc)
			s.mu.Unlock()
			go func() {
				defer close(sc.done)
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					sc.mu.Lock()
					sc.got.Write(buf[:n])
					sc.mu.Unlock()
					if err != nil {
						sc.eof.Store(errors.Is(err, io.EOF))
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			c.c.Close()
		}
	})
	return s
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *sink) conn(t *testing.T, i int) *sinkConn {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("sink connection %d", i), func() bool { return s.count() > i })
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[i]
}

// trap is a listener that must never be connected to; it counts connections.
type trap struct {
	addr  string
	conns atomic.Int32
}

func startTrap(t *testing.T, addr string) *trap {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("trap listen %s (the test needs it; run as root for port 443): %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	tr := &trap{addr: ln.Addr().String()}
	testkit.Serve(ln, func(net.Conn) { tr.conns.Add(1) })
	return tr
}

func redirectTo(t *testing.T, from, to string) {
	t.Helper()
	dialer.AnetTestRedirect(from, to)
	t.Cleanup(func() { dialer.AnetTestRedirect(from, "") })
}

// countingResolver answers from a table and counts lookups; next, when set, replaces the
// answer after the first lookup (DNS rebinding).
type countingResolver struct {
	mu    sync.Mutex
	table map[string][]netip.Addr
	next  map[string][]netip.Addr
	err   error
	calls int
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func (r *countingResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if network != "ip" {
		return nil, fmt.Errorf("unexpected network %q", network)
	}
	if r.err != nil {
		return nil, r.err
	}
	a := r.table[host]
	if r.next != nil && r.calls > 1 {
		a = r.next[host]
	}
	return a, nil
}

func (r *countingResolver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// testProxy is a Proxy served the way pkg/endpoint serves it: an HTTP/1.1 server whose
// CONNECT requests go to the proxy.
type testProxy struct {
	p     *Proxy
	addr  string // tcp host:port, or a unix socket path
	unix  bool
	wrap  func(net.Conn) net.Conn
	logMu *sync.Mutex
	logs  *bytes.Buffer
}

// logText returns what the proxy has logged so far.
func (tp *testProxy) logText() string {
	tp.logMu.Lock()
	defer tp.logMu.Unlock()
	return tp.logs.String()
}

// pypiProxy is a proxy allowing pypi.org under lim, with pypi.org's public address sent on
// to a sink.
func pypiProxy(t *testing.T, lim Limits) (*testProxy, *sink) {
	t.Helper()
	up := startSink(t)
	redirectTo(t, pypiIP+":443", up.addr)
	tp := startProxy(t, Policy{Allow: []string{"pypi.org"}, Limits: lim},
		&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}})
	return tp, up
}

func startProxy(t *testing.T, pol Policy, res Resolver) *testProxy {
	t.Helper()
	return startProxyOn(t, pol, res, false)
}

func startProxyOn(t *testing.T, pol Policy, res Resolver, unix bool) *testProxy {
	t.Helper()
	return startProxyWrapped(t, pol, res, unix, nil)
}

// startProxyWrapped serves the proxy through a listener whose connections wrap() wraps, the
// way pkg/endpoint counts connections.
func startProxyWrapped(t *testing.T, pol Policy, res Resolver, unix bool, wrap func(net.Conn) net.Conn) *testProxy {
	t.Helper()
	var logs bytes.Buffer
	logMu := &sync.Mutex{}
	logger := slog.New(slog.NewTextHandler(lockedWriter{logMu, &logs}, nil))
	p, err := NewProxy(pol, Options{Resolver: res, Logger: logger})
	if err != nil {
		t.Fatalf("NewProxy: %v", err)
	}
	var ln net.Listener
	tp := &testProxy{p: p, unix: unix, wrap: wrap, logMu: logMu, logs: &logs}
	if unix {
		tp.addr = filepath.Join(t.TempDir(), "endpoint.sock")
		ln, err = net.Listen("unix", tp.addr)
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			tp.addr = ln.Addr().String()
		}
	}
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	if tp.wrap != nil {
		ln = wrapListener{ln, tp.wrap}
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodConnect {
				p.ServeHTTP(w, r)
				return
			}
			http.NotFound(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          nil,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { p.Close(); srv.Close() })
	return tp
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (tp *testProxy) dial(t *testing.T) net.Conn {
	t.Helper()
	network := "tcp"
	if tp.unix {
		network = "unix"
	}
	c, err := net.DialTimeout(network, tp.addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connect sends raw (a CONNECT head, possibly with bytes behind it) and reads the answer.
func (tp *testProxy) connect(t *testing.T, raw string) (net.Conn, *http.Response, string) {
	t.Helper()
	c := tp.dial(t)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("write CONNECT: %v", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("read CONNECT answer to %q: %v", firstLine(raw), err)
	}
	// A 2xx answer to CONNECT has no body: what follows is the tunnel (net/http would read
	// it as an unbounded body).
	var body []byte
	if resp.StatusCode/100 != 2 {
		body, _ = io.ReadAll(resp.Body)
	}
	if br.Buffered() > 0 {
		t.Fatalf("proxy sent %d bytes after its answer to %q", br.Buffered(), firstLine(raw))
	}
	c.SetDeadline(time.Time{})
	return c, resp, string(body)
}

// open makes a tunnel to host and fails the test unless the answer is 200.
func (tp *testProxy) open(t *testing.T, host string) net.Conn {
	t.Helper()
	c, resp, body := tp.connect(t, connectHead(host))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s = %d %q, want 200", host, resp.StatusCode, body)
	}
	return c
}

func connectHead(host string) string {
	return fmt.Sprintf("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n", host, host)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// wantRefusal asserts an HTTP refusal (E9): status, both reason headers and the exact `anet:`
// body naming the rule and the code.
func wantRefusal(t *testing.T, what string, resp *http.Response, body string, code reasons.Code) {
	t.Helper()
	if resp.StatusCode != statusFor(code) || resp.Header.Get("X-Anet-Reason") != string(code) || resp.Header.Get("X-Anet-Refusal") != string(code) {
		t.Fatalf("%s = %d %s/%s %q, want %d %s", what, resp.StatusCode, resp.Header.Get("X-Anet-Reason"), resp.Header.Get("X-Anet-Refusal"), body, statusFor(code), code)
	}
	e, _ := reasons.Lookup(code)
	if want := "anet: " + reasons.Text(code) + " (rule " + e.Requirement + ", code " + string(code) + ")\n"; body != want {
		t.Fatalf("%s body = %q, want %q", what, body, want)
	}
}

// waitClosed reads from c until the proxy closes it and returns what arrived.
func waitClosed(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the proxy did not close the tunnel (read %d bytes)", len(got))
	}
	return got
}

func (tp *testProxy) refusals(c reasons.Code) int { return tp.p.Usage().Refusals[c] }

func (tp *testProxy) waitRefusal(t *testing.T, c reasons.Code, n int) {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("%d refusals %s", n, c), func() bool { return tp.refusals(c) >= n })
	if got := tp.refusals(c); got != n {
		t.Fatalf("refusals[%s] = %d, want %d (usage %+v)", c, got, n, tp.p.Usage())
	}
}

// httpsVia returns an HTTP client whose requests go through the proxy as CONNECT tunnels,
// verifying the upstream against the throw-away CA.
func httpsVia(t *testing.T, tp *testProxy) *http.Client {
	t.Helper()
	tr := &http.Transport{
		Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("http://anet-endpoint") },
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			if tp.unix {
				return d.DialContext(ctx, "unix", tp.addr)
			}
			return d.DialContext(ctx, "tcp", tp.addr)
		},
		TLSClientConfig:   &tls.Config{RootCAs: theCA(t).Pool},
		DisableKeepAlives: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// tlsConfig is a client config for name that trusts only the throw-away CA.
func tlsConfig(name string) *tls.Config {
	return &tls.Config{ServerName: name, RootCAs: theCAPool()}
}

func theCAPool() *x509.CertPool {
	if ca == nil {
		return x509.NewCertPool()
	}
	return ca.Pool
}

type wrapListener struct {
	net.Listener
	wrap func(net.Conn) net.Conn
}

func (l wrapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(c), nil
}

// opaqueConn hides the socket: no SyscallConn, no ReadFrom, no NetConn.
type opaqueConn struct{ net.Conn }

// unwrappableConn hides the socket but offers it through NetConn.
type unwrappableConn struct{ net.Conn }

func (c unwrappableConn) NetConn() net.Conn { return c.Conn }
