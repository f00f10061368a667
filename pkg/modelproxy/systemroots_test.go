//go:build anettest

package modelproxy

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
)

// TestMain re-executes the test binary as a child that calls the upstream through
// NewTransport(nil) — the system store — because Go loads the system roots once per process,
// so SSL_CERT_FILE can only be tested in a fresh one.
func TestMain(m *testing.M) {
	if addr := os.Getenv("ANET_MP_CHILD_UPSTREAM"); addr != "" {
		dialer.AnetTestRedirect("api.anthropic.com:443", addr)
		c := &http.Client{Transport: NewTransport(nil)}
		resp, err := c.Post("https://api.anthropic.com/v1/messages/count_tokens", "application/json", strings.NewReader(`{}`))
		if err != nil {
			fmt.Printf("error=%v\n", err)
			os.Exit(0)
		}
		io.Copy(io.Discard, resp.Body)
		fmt.Printf("status=%d proto=%d\n", resp.StatusCode, resp.ProtoMajor)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// E11, H7: the upstream is verified against the system store, which SSL_CERT_FILE replaces in
// tests; an unknown CA is refused; proxy variables in the environment are ignored.
func TestSystemRootsAndNoProxyE11H7(t *testing.T) {
	ca, err := localca.New("api.anthropic.com")
	if err != nil {
		t.Fatal(err)
	}
	up := standin.NewUpstream(ca, "k", "ph", "claude-haiku-5-5")
	defer up.Close()
	pem := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(pem, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := localca.New("api.anthropic.com")
	otherPEM := filepath.Join(t.TempDir(), "other.pem")
	os.WriteFile(otherPEM, other.PEM, 0o600)
	proxyEnv := []string{"HTTPS_PROXY=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9", "ALL_PROXY=http://127.0.0.1:9"}
	for _, c := range []struct {
		name, certFile, want string
	}{
		{"trusted through SSL_CERT_FILE, HTTP/2, proxy ignored", pem, "proto=2"},
		{"another CA is refused", otherPEM, "certificate signed by unknown authority"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append([]string{"ANET_MP_CHILD_UPSTREAM=" + up.Addr(), "SSL_CERT_FILE=" + c.certFile, "SSL_CERT_DIR=/nonexistent"}, proxyEnv...)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), c.want) {
				t.Fatalf("child = %q, %v, want %q", out, err, c.want)
			}
		})
	}
}
