package demo

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The stand-in answers only requests that carry the demo's key (what the node adds), and
// says so when one does not.
func TestStandInWantsTheNodesKey(t *testing.T) {
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := StartStandIn(filepath.Join(dir, "m.sock"), filepath.Join(dir, "ca.pem"), "demo-key")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pem, _ := os.ReadFile(s.CAFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", s.Socket)
		},
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}}
	post := func(key string) (int, string) {
		req, _ := http.NewRequest("POST", "https://api.anthropic.com/v1/messages", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi there"}]}`))
		req.Header.Set("X-Api-Key", key)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := post("demo-key"); code != 200 || !strings.Contains(body, `You asked: \"hi there\"`) {
		t.Fatalf("with the key: %d %s", code, body)
	}
	if code, _ := post("a-placeholder"); code != 401 || len(s.Problems()) != 1 {
		t.Fatalf("without the key: %d, problems %v", code, s.Problems())
	}
}

// The demo agent runs only with a run's endpoint settings, and prints Claude Code's result.
func TestRunAgentNeedsTheEndpoint(t *testing.T) {
	var out, errb bytes.Buffer
	if code := RunAgent([]string{"claude", "-p", "task"}, func(string) string { return "" }, &out, &errb); code != 1 {
		t.Fatalf("RunAgent without settings = %d", code)
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res["is_error"] != true || !strings.Contains(res["result"].(string), "no endpoint settings") {
		t.Fatalf("RunAgent printed %q", out.String())
	}
}
