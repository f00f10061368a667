package service

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
)

func call(t *testing.T, h privsep.Handler, method string, body any) (privsep.Reply, error) {
	t.Helper()
	b, _ := json.Marshal(body)
	return h(context.Background(), &privsep.Request{Method: method, Body: b})
}

func codeOf(err error) reasons.Code {
	var pe *privsep.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// One endpoint per run: a second open of the same run, a close of a run with none and an
// invalid policy are refused with bad_request and open nothing.
func TestOpenCloseTable(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "anet-svc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := testServer(t, "anthropic: sk-ant-table-7f3a\n")
	s.runsDir = dir
	t.Cleanup(s.CloseAll)
	h := s.Handlers()
	open := egresswire.OpenRequest{Policy: endpoint.Policy{RunID: "run-t1", Agent: "claude"}}
	if _, err := call(t, h[egresswire.MethodOpen], egresswire.MethodOpen, open); err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := call(t, h[egresswire.MethodOpen], egresswire.MethodOpen, open); codeOf(err) != reasons.BadRequest {
		t.Fatalf("second open of run-t1 = %v, want bad_request", err)
	}
	bad := egresswire.OpenRequest{Policy: endpoint.Policy{RunID: "../x", Agent: "claude"}}
	if _, err := call(t, h[egresswire.MethodOpen], egresswire.MethodOpen, bad); codeOf(err) != reasons.BadRequest {
		t.Fatalf("open with run id ../x = %v, want bad_request", err)
	}
	if s.Count() != 1 {
		t.Fatalf("%d endpoints open, want 1", s.Count())
	}
	if _, err := call(t, h[egresswire.MethodClose], egresswire.MethodClose, egresswire.CloseRequest{RunID: "run-t1"}); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := call(t, h[egresswire.MethodClose], egresswire.MethodClose, egresswire.CloseRequest{RunID: "run-t1"}); codeOf(err) != reasons.BadRequest {
		t.Fatalf("second close of run-t1 = %v, want bad_request", err)
	}
	if s.Count() != 0 {
		t.Fatalf("%d endpoints open after close, want 0", s.Count())
	}
}
