//go:build anettest

package modelproxy

import (
	"net"
	"strings"
	"testing"

	"anet.dev/anet/pkg/dialer"
)

// The run's usage says what the model service answered: statuses by code, and requests that
// reached no answer with the last error (the cause `anet autoreply test` names).
func TestUpstreamStatsInUsage(t *testing.T) {
	h := newHarness(t, "claude", "opus", Limits{})
	msg := `{"messages":[{"role":"user","content":"x"}]}`
	if resp, _ := h.do("POST", "/v1/messages", nil, msg); resp.StatusCode != 200 {
		t.Fatalf("first request = %d", resp.StatusCode)
	}
	h.up.ForgetModels()
	if resp, _ := h.do("POST", "/v1/messages", nil, msg); resp.StatusCode != 404 {
		t.Fatalf("second request = %d, want the upstream's 404", resp.StatusCode)
	}
	// Nothing listens where the upstream is now sent: the connection is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	h.up.DropConnections()
	h.proxy.rp.Transport.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	dialer.AnetTestRedirect("api.anthropic.com:443", dead)
	if resp, _ := h.do("POST", "/v1/messages", nil, msg); resp.StatusCode != 502 {
		t.Fatalf("third request = %d, want 502", resp.StatusCode)
	}
	u := h.proxy.Usage().Upstream
	if u.Statuses["200"] != 1 || u.Statuses["404"] != 1 || u.Failed != 1 || !strings.Contains(u.LastError, "connection refused") {
		t.Fatalf("Usage().Upstream = %+v, want one 200, one 404 and one failure naming its cause", u)
	}
	if strings.Contains(u.LastError, h.key) {
		t.Fatal("the upstream error holds the key")
	}
}
