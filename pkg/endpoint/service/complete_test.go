package service

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
)

func testServer(t *testing.T, keysYAML string) *Service {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(p, []byte(keysYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := keys.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return New(k, t.TempDir(), slog.New(slog.DiscardHandler))
}

// P3, F2: without the provider's key the completion fails with no_api_key before anything
// is sent; bad requests name the field.
func TestCompleteRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		keys string
		req  egresswire.CompleteRequest
		want reasons.Code
	}{
		{"no openai key", "anthropic: sk-ant-x\n", egresswire.CompleteRequest{RunID: "r1", Task: "hi"}, reasons.NoAPIKey},
		{"no custom key for api_base", "openai: sk-x\n", egresswire.CompleteRequest{RunID: "r1", Task: "hi", APIBase: "https://llm.example/v1"}, reasons.NoAPIKey},
		{"empty task", "openai: sk-x\n", egresswire.CompleteRequest{RunID: "r1"}, reasons.BadRequest},
		{"bad run id", "openai: sk-x\n", egresswire.CompleteRequest{RunID: "../r", Task: "hi"}, reasons.BadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testServer(t, c.keys)
			body, _ := json.Marshal(c.req)
			_, err := s.handleComplete(context.Background(), &privsep.Request{Method: egresswire.MethodComplete, Body: body})
			var pe *privsep.Error
			if !errors.As(err, &pe) || pe.Code != c.want {
				t.Fatalf("handleComplete(%s) = %v, want code %s", c.name, err, c.want)
			}
		})
	}
}
