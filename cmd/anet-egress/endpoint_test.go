package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/pkg/modelproxy/standin"
)

// TestMain lets a test run this binary's real main: the test binary re-executes itself with
// ANET_EGRESS_TEST_MAIN=1 and the subcommand's arguments.
func TestMain(m *testing.M) {
	if os.Getenv("ANET_EGRESS_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startEndpoint(t *testing.T, policy string, extra ...string) (*exec.Cmd, *bufio.Reader, *standin.LogBuffer, string, string) {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "anet-cmd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	key := "sk-ant-cmdtest-3b9d"
	pol := filepath.Join(dir, "policy.json")
	keysFile := filepath.Join(dir, "keys.yaml")
	os.WriteFile(pol, []byte(policy), 0o600)
	os.WriteFile(keysFile, []byte("anthropic: "+key+"\n"), 0o600)
	sock := filepath.Join(dir, "run", "ep.sock")
	args := append([]string{"endpoint", "--policy", pol, "--socket", sock, "--keys", keysFile}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	// H7: a proxy in the environment must change nothing; the key is not in the environment.
	cmd.Env = []string{"ANET_EGRESS_TEST_MAIN=1", "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "PATH=/usr/bin:/bin"}
	stderr := &standin.LogBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(out), stderr, sock, key
}

func waitExit(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("anet-egress endpoint did not exit within 60 s")
		return nil
	}
}

// E1, H7, F3: the subcommand prints the socket and placeholder, serves the endpoint, ends on
// SIGTERM removing the socket and its directory, and never prints the key.
func TestEndpointCommandServesAndEndsOnSIGTERM(t *testing.T) {
	cmd, out, stderr, sock, key := startEndpoint(t, `{"run_id":"cmd-1","agent":"claude","model":"opus"}`)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("read stdout: %v (stderr: %s)", err, stderr.String())
	}
	var info struct{ Socket, Placeholder string }
	if err := json.Unmarshal([]byte(line), &info); err != nil || info.Socket != sock || len(info.Placeholder) != 64 {
		t.Fatalf("stdout = %q, want {\"socket\":%q,\"placeholder\":<64 hex>}", line, sock)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := client.Head("http://endpoint/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD / = %v, %v, want 200", resp, err)
	}
	req, _ := http.NewRequest("POST", "http://endpoint/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", "not-the-placeholder")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(b), "anet: ") {
		t.Fatalf("POST /v1/messages without the placeholder = %d %s, want 401 anet:", resp.StatusCode, b)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	cr, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatalf("CONNECT answer: %v", err)
	}
	cb, _ := io.ReadAll(io.LimitReader(cr.Body, 4096))
	conn.Close()
	if cr.StatusCode == 200 || !strings.Contains(string(cb), "anet:") {
		t.Fatalf("CONNECT to a host not allowed = %d %s, want a refusal with an anet: reason", cr.StatusCode, cb)
	}
	client.CloseIdleConnections()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, cmd); err != nil {
		t.Fatalf("exit after SIGTERM = %v, want 0 (stderr: %s)", err, stderr.String())
	}
	for _, p := range []string{sock, filepath.Dir(sock)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("after SIGTERM Lstat(%s) = %v, want gone", p, err)
		}
	}
	if !strings.Contains(stderr.String(), "endpoint usage") {
		t.Fatalf("stderr has no usage line: %s", stderr.String())
	}
	if strings.Contains(stderr.String(), key) || strings.Contains(line, key) {
		t.Fatal("the key appears in the command's output")
	}
}

func TestEndpointCommandRefusesBadPolicy(t *testing.T) {
	for _, c := range []struct{ name, policy, want string }{
		{"unknown field", `{"run_id":"r","agent":"claude","modell":"x"}`, "modell"},
		{"cursor", `{"run_id":"r","agent":"cursor"}`, "agent_unsupported"},
		{"raised limit", `{"run_id":"r","agent":"claude","limits":{"connections":64}}`, "limits.connections"},
		{"model host allowed", `{"run_id":"r","agent":"claude","allow":["api.anthropic.com"]}`, "allow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, _, stderr, _, _ := startEndpoint(t, c.policy)
			err := waitExit(t, cmd)
			if err == nil || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit = %v, stderr %q, want failure naming %q", err, stderr.String(), c.want)
			}
		})
	}
}
