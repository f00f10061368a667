package endpoint

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/reasons"
)

// answering is an upstream transport that answers every forwarded request with 200: a
// request that reaches it was served.
type answering struct{ calls atomic.Int64 }

func (a *answering) RoundTrip(r *http.Request) (*http.Response, error) {
	a.calls.Add(1)
	body := `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hello"}],"model":"m","usage":{"input_tokens":1,"output_tokens":1}}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// recordingTunnel stands for the egress tunnel: it answers 204 to every CONNECT it is given
// and counts them, so a test sees which CONNECTs the endpoint let through.
type recordingTunnel struct{ calls atomic.Int64 }

func (rt *recordingTunnel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt.calls.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

var loopbackPolicy = Policy{RunID: "run-mac", Agent: "claude", Listen: egresswire.ListenLoopback}

// M1, E1: on the host's loopback (a Seatbelt run has no network namespace of its own) the
// endpoint listens on 127.0.0.1:P, and any local process can connect. Every request and
// every CONNECT must carry the run's placeholder, or it is refused before routing: a model
// request without it never reaches the upstream, a CONNECT without it never reaches the
// tunnel, and the refusals are counted and logged once. With the placeholder, each is served.
func TestLoopbackNeedsTheTokenM1(t *testing.T) {
	up := &answering{}
	tunnel := &recordingTunnel{}
	var logs bytes.Buffer
	e := openTest(t, loopbackPolicy, tunnel, Options{Transport: up, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	host, port, err := net.SplitHostPort(e.Addr())
	if err != nil || host != "127.0.0.1" || port == "0" || e.SocketPath() != "" {
		t.Fatalf("Addr() = %q, SocketPath() = %q: want 127.0.0.1:P and no socket", e.Addr(), e.SocketPath())
	}
	// The same port of ::1 is held (the profile's "localhost:P" reaches it too): no other
	// program can listen there, and a connection there gets nothing.
	if ln, err := net.Listen("tcp6", net.JoinHostPort("::1", port)); err == nil {
		ln.Close()
		t.Fatalf("another program could listen on [::1]:%s, which the run may reach", port)
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("listen on [::1]:%s = %v: this test needs the IPv6 loopback (sysctl net.ipv6.conf.lo.disable_ipv6=0)", port, err)
	}
	ph := e.Placeholder()
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	const model = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
	const connect = "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n"
	for _, c := range []struct {
		name, head string
		status     string
		served     bool // reached the upstream or the tunnel
	}{
		{"model request without token", model, "401", false},
		{"model request with a wrong token", model + "X-Api-Key: " + strings.Repeat("0", 64) + "\r\n", "401", false},
		{"model request with the operator's key", model + "X-Api-Key: " + testKey + "\r\n", "401", false},
		{"model request with x-api-key", model + "X-Api-Key: " + ph + "\r\n", "200", true},
		{"model request with bearer", model + "Authorization: Bearer " + ph + "\r\n", "200", true},
		{"HEAD / without token", "HEAD / HTTP/1.1\r\nHost: x\r\n", "401", false},
		{"HEAD / with token", "HEAD / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ph + "\r\n", "200", false},
		{"Claude Code's own call without token", "POST /api/event_logging/batch HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n", "401", false},
		{"CONNECT without token", connect, "407", false},
		{"CONNECT with the token only as an API key", connect + "X-Api-Key: " + ph + "\r\nAuthorization: Bearer " + ph + "\r\n", "407", false},
		{"CONNECT with a wrong password", connect + "Proxy-Authorization: " + basic("anet", "nope") + "\r\n", "407", false},
		{"CONNECT with the token as user name", connect + "Proxy-Authorization: " + basic(ph, "") + "\r\n", "407", false},
		{"CONNECT with undecodable basic", connect + "Proxy-Authorization: Basic %%%\r\n", "407", false},
		{"CONNECT with basic", connect + "Proxy-Authorization: " + basic("anet", ph) + "\r\n", "204", true},
		{"CONNECT with bearer", connect + "Proxy-Authorization: Bearer " + ph + "\r\n", "204", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := up.calls.Load() + tunnel.calls.Load()
			body := ""
			if strings.Contains(c.head, "Content-Length: 2") {
				body = "{}"
			}
			conn, status, answer := rawRequestOn(t, "tcp", e.Addr(), c.head+"\r\n"+body)
			conn.Close()
			if status != c.status {
				t.Fatalf("%s = %s %q, want %s", strings.SplitN(c.head, "\r\n", 2)[0], status, answer, c.status)
			}
			if (status == "401" || status == "407") && !strings.HasPrefix(c.head, "HEAD") {
				if !strings.Contains(answer, "anet: "+reasons.Text(TokenMissing)) {
					t.Fatalf("refusal body = %q, want the %s sentence", answer, TokenMissing)
				}
			}
			if served := up.calls.Load()+tunnel.calls.Load() > before; served != c.served {
				t.Fatalf("served = %v, want %v", served, c.served)
			}
		})
	}
	u := e.Usage()
	if got := u.Refusals[TokenMissing]; got != 10 {
		t.Errorf("Usage.Refusals[%s] = %d, want 10", TokenMissing, got)
	}
	if n := strings.Count(logs.String(), "without the run's token"); n != 1 {
		t.Errorf("the log has %d lines about requests without the token, want exactly 1 (logged once, then counted):\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), ph) {
		t.Error("the endpoint's log holds the placeholder")
	}
}

// M1: what real clients do with the proxy URL the node gives them on macOS
// (http://anet:<placeholder>@127.0.0.1:P): Go's transport sends the user info as
// Proxy-Authorization on CONNECT and gets through; the same client with the token missing
// from the URL gets 407 and its tunnel never reaches the tunnel handler.
func TestLoopbackProxyURLCredentialsM1(t *testing.T) {
	tunnel := &recordingTunnel{}
	e := openTest(t, loopbackPolicy, tunnel, Options{Transport: &tripwire{}})
	get := func(proxy string) error {
		pu, err := url.Parse(proxy)
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
		resp, err := c.Get("https://pypi.org/simple/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	err := get("http://anet@" + e.Addr())
	if err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") || tunnel.calls.Load() != 0 {
		t.Fatalf("CONNECT through a proxy URL without the token: %v, %d tunnel calls; want 407 and none", err, tunnel.calls.Load())
	}
	// The recording tunnel answers 204, which the client takes as a failed CONNECT: what
	// matters is that the tunnel handler was reached.
	get("http://anet:" + e.Placeholder() + "@" + e.Addr())
	if tunnel.calls.Load() != 1 {
		t.Fatalf("CONNECT through the node's proxy URL reached the tunnel %d times, want 1", tunnel.calls.Load())
	}
}

// E1, H4: on a unix socket only the run can reach, nothing changes: a CONNECT needs no
// proxy credentials (the agents on Linux are not given any), and no dir is left behind by a
// loopback endpoint.
func TestSocketModeNeedsNoProxyCredentials(t *testing.T) {
	tunnel := &recordingTunnel{}
	e := openTest(t, claudePolicy, tunnel, Options{Transport: &tripwire{}})
	conn, status, _ := rawRequest(t, e.SocketPath(), "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n")
	conn.Close()
	if status != "204" || tunnel.calls.Load() != 1 || e.Addr() != "" {
		t.Fatalf("CONNECT on the socket = %s, %d tunnel calls, Addr %q; want 204 from the tunnel, 1, \"\"", status, tunnel.calls.Load(), e.Addr())
	}

	dir := shortDir(t)
	l, err := Open(dir, loopbackPolicy, loadKeys(t, "anthropic: "+testKey+"\n"), nil, Options{Transport: &tripwire{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a loopback endpoint made its run dir %s (%v): it needs none", dir, err)
	}
	addr := l.Addr()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("dial %s after Close succeeded", addr)
	}
	if _, err := os.Lstat(filepath.Join(dir, SocketName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after a loopback endpoint closed: %v", err)
	}
}
