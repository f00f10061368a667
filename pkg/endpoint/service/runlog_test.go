package service

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/privsep"
)

// One structured line per decision: every line of an endpoint that serve opened names its
// run exactly once, the tunnel's refusals included, so anetd can attribute it.
func TestEndpointLogLinesNameTheRunOnce(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "anet-runlog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	kf := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(kf, []byte("anthropic: sk-ant-runlog-1c2d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := keys.Load(kf)
	if err != nil {
		t.Fatal(err)
	}
	logs := &standin.LogBuffer{}
	s := New(k, dir, slog.New(slog.NewJSONHandler(logs, nil)))
	body, _ := json.Marshal(egresswire.OpenRequest{Policy: endpoint.Policy{RunID: "run-log-1", Agent: "claude", Allow: []string{"pypi.org"}}})
	rep, err := s.handleOpen(context.Background(), &privsep.Request{Method: egresswire.MethodOpen, Body: body})
	if err != nil {
		t.Fatalf("handleOpen: %v", err)
	}
	t.Cleanup(s.CloseAll)
	c, err := net.Dial("unix", rep.Body.(egresswire.OpenReply).Socket)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode == http.StatusOK {
		t.Fatalf("CONNECT example.com = %v, %v, want a refusal", resp, err)
	}
	c.Close()
	body, _ = json.Marshal(egresswire.CloseRequest{RunID: "run-log-1"})
	if _, err := s.handleClose(context.Background(), &privsep.Request{Method: egresswire.MethodClose, Body: body}); err != nil {
		t.Fatalf("handleClose: %v", err)
	}
	var tunnelLines int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if n := strings.Count(line, `"run":`); n != 1 || !strings.Contains(line, `"run":"run-log-1"`) {
			t.Errorf("log line names the run %d times, want once as run-log-1: %s", n, line)
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "egress refused" {
			tunnelLines++
		}
	}
	if tunnelLines != 1 {
		t.Fatalf("%d \"egress refused\" lines, want 1; log:\n%s", tunnelLines, logs.String())
	}
}
