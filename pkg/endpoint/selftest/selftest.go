// Package selftest is `anet-egress self-test`: it starts a throw-away CA and a fake model
// upstream on loopback, opens real endpoints (model proxy + CONNECT egress) wired to that
// fake, and attacks them the way a hostile agent would. Every check must come out as the
// rules say (E2–E9, H4–H5, R1), the fake must see the operator's key and nothing of the
// agent's credentials, and the key must appear in no log line. It touches no network beyond
// loopback and needs no keys file.
package selftest

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/egress"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
)

// run is one opened endpoint with its fake upstream.
type run struct {
	e           *endpoint.Endpoint
	fake        *standin.Upstream
	client      *http.Client
	placeholder string
}

// Run performs every check and returns the report (pkg/check's shape). An error means the
// self-test itself could not be set up.
func Run(ctx context.Context) (check.Report, error) {
	dir, err := os.MkdirTemp("", "anet-egress-selftest-")
	if err != nil {
		return check.Report{}, err
	}
	defer os.RemoveAll(dir)
	ca, err := localca.New("api.anthropic.com", "api.openai.com")
	if err != nil {
		return check.Report{}, err
	}
	rnd := make([]byte, 16)
	rand.Read(rnd)
	key := "sk-selftest-" + hex.EncodeToString(rnd)
	k, err := keysWith(dir, key)
	if err != nil {
		return check.Report{}, err
	}
	logs := &standin.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	var rep check.Report
	add := func(name, req string, ok bool, detail string, args ...any) {
		rep.Add(check.Check{Name: name, Requirement: req, OK: ok, Detail: fmt.Sprintf(detail, args...)})
	}
	claude, err := open(dir, "claude", ca, k, log, []string{"pypi.org"})
	if err != nil {
		return check.Report{}, err
	}
	defer claude.close()
	codex, err := open(dir, "codex", ca, k, log, nil)
	if err != nil {
		return check.Report{}, err
	}
	defer codex.close()

	claudeChecks(ctx, claude, add)
	codexChecks(ctx, codex, add)
	egressChecks(claude, add)

	for _, r := range []*run{claude, codex} {
		probs := r.fake.Problems()
		add("upstream saw only what it should ("+r.e.Model()+")", "E1 E2 E3 E7 F3", len(probs) == 0, "%s", strings.Join(probs, "; "))
	}
	add("the key is in no log line", "F3", !strings.Contains(logs.String(), key), "%d bytes of log inspected", len(logs.String()))
	return rep, nil
}

func keysWith(dir, key string) (keys.Keys, error) {
	p := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(p, []byte("anthropic: "+key+"\nopenai: "+key+"\n"), 0o600); err != nil {
		return keys.Keys{}, err
	}
	return keys.Load(p)
}

// open starts an endpoint for agent whose model upstream is the fake (through an injected
// transport: the release binary has no redirect hook) and a fake that knows the placeholder.
func open(dir, agent string, ca *localca.Authority, k keys.Keys, log *slog.Logger, allow []string) (*run, error) {
	var fakeAddr string
	var mu sync.Mutex
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			mu.Lock()
			a := fakeAddr
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, a)
		},
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool},
		ForceAttemptHTTP2: true,
	}
	tunnel, err := egress.NewProxy(egress.Policy{Allow: allow}, egress.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	e, err := endpoint.Open(filepath.Join(dir, agent), endpoint.Policy{RunID: "selftest-" + agent, Agent: agent, Allow: allow}, k, tunnel,
		endpoint.Options{Transport: tr, Logger: log, TunnelUsage: func() any { return tunnel.Usage() }, TunnelReceipts: tunnel.Receipts})
	if err != nil {
		tunnel.Close()
		return nil, fmt.Errorf("open %s endpoint: %w", agent, err)
	}
	fake := standin.NewUpstream(ca, keyOf(k, agent), e.Placeholder(), e.Model())
	mu.Lock()
	fakeAddr = fake.Addr()
	mu.Unlock()
	sock := e.SocketPath()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	return &run{e: e, fake: fake, client: client, placeholder: e.Placeholder()}, nil
}

func keyOf(k keys.Keys, agent string) string {
	p := "anthropic"
	if agent == "codex" {
		p = "openai"
	}
	s, _ := k.Get(p)
	return s.Reveal()
}

func (r *run) close() {
	r.e.Close()
	r.fake.Close()
}

// post sends body to path as the agent, with the placeholder and a planted agent credential.
func (r *run) post(ctx context.Context, path, body string, hdr map[string]string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://127.0.0.1"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.placeholder)
	req.Header.Set("Anthropic-Workspace-Id", standin.AgentCred)
	req.Header.Set("Cookie", "session="+standin.AgentCred)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// connect sends a raw CONNECT and returns the status line and the reason header.
func (r *run) connect(target string) (string, string) {
	c, err := net.DialTimeout("unix", r.e.SocketPath(), 10*time.Second)
	if err != nil {
		return err.Error(), ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	// The Host header is kept plain so that the request target alone carries the attack.
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err.Error(), ""
	}
	resp.Body.Close()
	return resp.Status, resp.Header.Get("X-Anet-Reason")
}
