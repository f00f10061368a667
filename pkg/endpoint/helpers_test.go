package endpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"anet.dev/anet/pkg/keys"
)

const testKey = "sk-ant-operator-5e1f9c2d7b"

func loadKeys(t *testing.T, content string) keys.Keys {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := keys.Load(p)
	if err != nil {
		t.Fatalf("keys.Load: %v", err)
	}
	return k
}

// tripwire is an upstream transport that records and fails every call: in tests that must
// not reach the model service, a forwarded request is a failure, never a silent success.
type tripwire struct{ calls atomic.Int64 }

func (tw *tripwire) RoundTrip(r *http.Request) (*http.Response, error) {
	tw.calls.Add(1)
	return nil, errors.New("tripwire: request forwarded upstream")
}

func shortDir(t *testing.T) string {
	// t.TempDir paths can pass sun_path's 107 bytes; /tmp keeps them short.
	d, err := os.MkdirTemp("/tmp", "anet-ep-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "run")
}

func openTest(t *testing.T, p Policy, tunnel http.Handler, o Options) *Endpoint {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e, err := Open(shortDir(t), p, loadKeys(t, "anthropic: "+testKey+"\nopenai: sk-openai-x\n"), tunnel, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

func call(t *testing.T, c *http.Client, method, path string, h http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://endpoint"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// rawRequest writes a raw HTTP request on a new connection and returns the status line and
// the rest of the answer.
func rawRequest(t *testing.T, sock, req string) (net.Conn, string, string) {
	t.Helper()
	return rawRequestOn(t, "unix", sock, req)
}

// rawRequestOn is rawRequest on any network ("tcp" for a loopback endpoint).
func rawRequestOn(t *testing.T, network, addr, req string) (net.Conn, string, string) {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.SplitN(req, " ", 2)[0]})
	if err != nil {
		t.Fatalf("read answer to %q: %v", strings.SplitN(req, "\r\n", 2)[0], err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return c, fmt.Sprint(resp.StatusCode), string(b)
}
