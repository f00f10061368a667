package endpoint

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/modelproxy"
	"anet.dev/anet/pkg/reasons"
)

var claudePolicy = Policy{RunID: "run-1", Agent: "claude"}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// E1, F3: the run directory is 0700, the socket 0600, both gone after Close.
func TestOpenModesAndCloseE1(t *testing.T) {
	e := openTest(t, claudePolicy, nil, Options{Transport: &tripwire{}})
	dir := filepath.Dir(e.SocketPath())
	for _, c := range []struct {
		path string
		mode os.FileMode
		typ  os.FileMode
	}{{dir, 0o700, os.ModeDir}, {e.SocketPath(), 0o600, os.ModeSocket}} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.mode || fi.Mode().Type() != c.typ {
			t.Fatalf("mode of %s = %v, want %v %v", c.path, fi.Mode(), c.typ, c.mode)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, p := range []string{e.SocketPath(), dir} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("after Close, Lstat(%s) = %v, want not exist", p, err)
		}
	}
	if _, err := net.Dial("unix", e.SocketPath()); err == nil {
		t.Fatal("dial after Close succeeded")
	}
}

func TestOpenRefusesUnsafeDir(t *testing.T) {
	base := filepath.Dir(shortDir(t))
	loose := filepath.Join(base, "loose")
	os.Mkdir(loose, 0o755)
	os.Chmod(loose, 0o755)
	link := filepath.Join(base, "link")
	own := filepath.Join(base, "own")
	os.Mkdir(own, 0o700)
	os.Symlink(own, link)
	// Another user's 0700 directory: its owner could reach the socket.
	foreign := filepath.Join(base, "foreign")
	os.Mkdir(foreign, 0o700)
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatalf("chown %s to nobody (the test runs as root): %v", foreign, err)
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	k := loadKeys(t, "anthropic: "+testKey+"\n")
	// Each case must fail for its own rule: a listen error or another check would hide the
	// removal of the one it names.
	notOurs := "is not a 0700 directory owned by this user"
	for _, c := range []struct{ name, dir, want string }{
		{"group-readable", loose, notOurs},
		{"symlink", link, notOurs},
		{"other owner", foreign, notOurs},
		{"own 0600 file", file, notOurs},
		{"long path", filepath.Join(base, strings.Repeat("x", 120)), "unix sockets allow at most 107: set XDG_RUNTIME_DIR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := Open(c.dir, claudePolicy, k, nil, Options{Logger: quiet})
			if err == nil {
				e.Close()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open(%s) = %v, want refusal %q", c.dir, err, c.want)
			}
		})
	}
	t.Run("existing own 0700 dir kept", func(t *testing.T) {
		e, err := Open(own, claudePolicy, k, nil, Options{Transport: &tripwire{}, Logger: quiet})
		if err != nil {
			t.Fatalf("Open(own 0700 dir) = %v", err)
		}
		e.Close()
		if _, err := os.Stat(own); err != nil {
			t.Fatalf("Close removed a directory it did not create: %v", err)
		}
	})
	t.Run("missing key is no_api_key", func(t *testing.T) {
		_, err := Open(shortDir(t), Policy{RunID: "r", Agent: "codex"}, k, nil, Options{Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), string(reasons.NoAPIKey)) {
			t.Fatalf("Open(codex without openai key) = %v, want no_api_key", err)
		}
	})
}

func TestPlaceholderRandomE1(t *testing.T) {
	a := openTest(t, claudePolicy, nil, Options{Transport: &tripwire{}})
	b := openTest(t, claudePolicy, nil, Options{Transport: &tripwire{}})
	re := regexp.MustCompile(`^[0-9a-f]{64}$`)
	if !re.MatchString(a.Placeholder()) || a.Placeholder() == b.Placeholder() {
		t.Fatalf("placeholders %q, %q: want two different 64-hex-digit tokens", a.Placeholder(), b.Placeholder())
	}
}

// E1: routes. Claude Code's own calls are answered locally, never forwarded; unknown paths and
// plain-HTTP proxy requests get 404 with a reason; CONNECT without a tunnel is refused.
func TestRoutesE1(t *testing.T) {
	tw := &tripwire{}
	e := openTest(t, claudePolicy, nil, Options{Transport: tw})
	c := unixClient(e.SocketPath())
	for _, tc := range []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"HEAD /", "HEAD", "/", 200, ""},
		{"HEAD /api/hello", "HEAD", "/api/hello", 200, ""},
		{"event logging", "POST", "/api/event_logging/batch", 200, "{}"},
		{"GET /", "GET", "/", 404, "anet: " + reasons.Text(NotFound)},
		{"other path", "GET", "/metrics", 404, "anet: " + reasons.Text(NotFound)},
		{"v2", "POST", "/v2/messages", 404, "anet: " + reasons.Text(NotFound)},
		{"model without placeholder", "POST", "/v1/messages", 401, "anet: " + reasons.Text(modelproxy.PlaceholderMissing)},
		{"model with the operator key", "POST", "/v1/messages", 401, "anet: " + reasons.Text(modelproxy.PlaceholderMissing)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.name == "model with the operator key" {
				h.Set("X-Api-Key", testKey)
			}
			resp, body := call(t, c, tc.method, tc.path, h, `{}`)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("%s %s = %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
	t.Run("absolute URI", func(t *testing.T) {
		conn, status, body := rawRequest(t, e.SocketPath(), "GET http://example.com/v1/messages HTTP/1.1\r\nHost: example.com\r\n\r\n")
		conn.Close()
		if status != "404" || !strings.Contains(body, reasons.Text(NotFound)) {
			t.Fatalf("absolute-form request = %s %q, want 404 %s", status, body, NotFound)
		}
	})
	t.Run("CONNECT without tunnel", func(t *testing.T) {
		conn, status, body := rawRequest(t, e.SocketPath(), "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n")
		conn.Close()
		if status != "403" || !strings.Contains(body, "anet: "+reasons.Text(TunnelUnavailable)) {
			t.Fatalf("CONNECT = %s %q, want 403 %s", status, body, TunnelUnavailable)
		}
	})
	if n := tw.calls.Load(); n != 0 {
		t.Fatalf("%d requests were forwarded upstream, want 0", n)
	}
	u := e.Usage()
	if u.Refusals[NotFound] != 4 || u.Refusals[TunnelUnavailable] != 1 || u.Model.Refusals[modelproxy.PlaceholderMissing] != 2 {
		t.Fatalf("Usage = %+v, want 4 not-found, 1 tunnel-unavailable, 2 placeholder refusals", u)
	}
}

// CONNECT goes to the tunnel handler, which may hijack; Close ends hijacked connections too.
func TestConnectGoesToTunnelAndCloseEndsIt(t *testing.T) {
	hijacked := make(chan struct{}, 1)
	tunnel := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		brw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n")
		brw.Flush()
		hijacked <- struct{}{}
		io.Copy(io.Discard, conn) // hold the tunnel open until the endpoint closes it
	})
	e := openTest(t, claudePolicy, tunnel, Options{Transport: &tripwire{}, TunnelUsage: func() any { return map[string]int{"tunnels_opened": 1} }})
	c, err := net.Dial("unix", e.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("CONNECT answer = %q, %v, want 200 from the tunnel handler", line, err)
	}
	<-hijacked
	if u, _ := json.Marshal(e.Usage()); !strings.Contains(string(u), `"tunnel":{"tunnels_opened":1}`) {
		t.Fatalf("Usage = %s, want the tunnel handler's usage under \"tunnel\"", u)
	}
	e.Close()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br.ReadString('\n') // the blank line
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("read on a tunnel after Close = %v, want EOF", err)
	}
}

// R1: 32 simultaneous connections; the 33rd is refused with a reason; after one closes, a new
// one is served.
func TestConnectionLimitR1(t *testing.T) {
	e := openTest(t, claudePolicy, nil, Options{Transport: &tripwire{}})
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := 0; i < limits.EndpointConnections; i++ {
		c, status, _ := rawRequest(t, e.SocketPath(), "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
		if status != "200" {
			t.Fatalf("connection %d: HEAD / = %s, want 200", i+1, status)
		}
		held = append(held, c) // keep-alive: the connection stays open
	}
	c, status, body := rawRequest(t, e.SocketPath(), "GET /api/hello HTTP/1.1\r\nHost: x\r\n\r\n")
	c.Close()
	if status != "503" || !strings.Contains(body, "anet: "+reasons.Text(ConnectionLimit)) {
		t.Fatalf("connection 33 = %s %q, want 503 %q", status, body, reasons.Text(ConnectionLimit))
	}
	held[0].Close()
	held = held[1:]
	testkit.WaitFor(t, "a connection admitted after one of 32 closed", func() bool {
		c, status, _ := rawRequest(t, e.SocketPath(), "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
		if status == "200" {
			held = append(held, c)
			return true
		}
		c.Close()
		return false
	})
	if u := e.Usage(); u.ConnectionsRefused < 1 {
		t.Fatalf("Usage.ConnectionsRefused = %d, want ≥ 1", u.ConnectionsRefused)
	}
}

// Lowered limits from the policy apply.
func TestPolicyLimitsApplied(t *testing.T) {
	e := openTest(t, Policy{RunID: "r", Agent: "claude", Limits: Limits{Connections: 1}}, nil, Options{Transport: &tripwire{}})
	c1, status, _ := rawRequest(t, e.SocketPath(), "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
	defer c1.Close()
	c2, status2, _ := rawRequest(t, e.SocketPath(), "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
	c2.Close()
	if status != "200" || status2 != "503" {
		t.Fatalf("with connections: 1, statuses = %s, %s, want 200, 503", status, status2)
	}
}
