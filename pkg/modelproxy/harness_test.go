//go:build anettest

package modelproxy

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/secret"
)

type harness struct {
	t     testing.TB
	key   string
	ph    string
	proxy *Proxy
	front *httptest.Server
	up    *standin.Upstream
	logs  *standin.LogBuffer
	// upRoots trusts the fake upstream's certificate.
	upRoots *x509.CertPool
}

func randHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newHarness starts a fake upstream for agent's provider host, redirects the proxy's dialer to
// it (anettest hook, after every rule ran), and serves the proxy on a loopback HTTP server.
// opts change the proxy's options (an allowance).
func newHarness(t testing.TB, agent, model string, lim Limits, opts ...func(*Options)) *harness {
	t.Helper()
	return newHarnessKey(t, "sk-operator-"+randHex(t, 16), agent, model, lim, opts...)
}

// newHarnessKey is newHarness with the operator's key given (a key of an operator's own
// service, with characters an encoder escapes).
func newHarnessKey(t testing.TB, key, agent, model string, lim Limits, opts ...func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, key: key, ph: randHex(t, 32), logs: &standin.LogBuffer{}}
	e := mustEngine(t, agent, "", model)
	up, _ := upstream.For(agent, "")
	ca, err := localca.New(up.Host)
	if err != nil {
		t.Fatal(err)
	}
	h.upRoots = ca.Pool
	h.up = standin.NewUpstream(ca, h.key, h.ph, e.Model())
	t.Cleanup(func() {
		h.up.Close()
		for _, p := range h.up.Problems() {
			t.Errorf("fake upstream: %s", p)
		}
	})
	dialer.AnetTestRedirect(up.Addr(), h.up.Addr())
	t.Cleanup(func() { dialer.AnetTestRedirect(up.Addr(), "") })
	o := Options{
		Placeholder: h.ph, Key: secret.New(h.key), Limits: lim, RootCAs: ca.Pool,
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, f := range opts {
		f(&o)
	}
	p, err := New(e, up, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.proxy = p
	t.Cleanup(p.Close)
	h.front = httptest.NewServer(p)
	t.Cleanup(h.front.Close)
	return h
}

// do sends one request as the agent: with the placeholder and a set of agent credentials that
// must never reach the upstream.
func (h *harness) do(method, path string, hdrs http.Header, body string) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.front.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.ph)
	req.Header.Set("Cookie", "session="+standin.AgentCred)
	req.Header.Set("Anthropic-Workspace-Id", standin.AgentCred)
	req.Header.Set("OpenAI-Organization", standin.AgentCred)
	req.Header.Set("Proxy-Authorization", "Basic "+standin.AgentCred)
	req.Header.Set("X-Forwarded-For", standin.AgentCred)
	for k, vs := range hdrs {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("read %s %s: %v", method, path, err)
	}
	return resp, b
}
