package service

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/egress"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/endpoint"
)

// M1, H4: anet-egress opens a run's endpoint on the host loopback when anetd asks for it
// (a Seatbelt run): the reply carries the address and no socket, and the real CONNECT egress
// behind it answers only a CONNECT that carries the placeholder. A local process without it
// gets 407; with it, the egress rules judge the request (a host off the allow-list is
// refused by them, not by the token check).
func TestLoopbackEndpointThroughTheServiceM1(t *testing.T) {
	s := testServer(t, "anthropic: sk-ant-loopback-4d2e\n")
	t.Cleanup(s.CloseAll)
	h := s.Handlers()
	open := egresswire.OpenRequest{Policy: endpoint.Policy{RunID: "run-mac", Agent: "claude", Listen: egresswire.ListenLoopback, Allow: []string{"pypi.org"}}}
	rep, err := call(t, h[egresswire.MethodOpen], egresswire.MethodOpen, open)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	var or egresswire.OpenReply
	b, _ := json.Marshal(rep.Body)
	json.Unmarshal(b, &or)
	if or.Socket != "" || !strings.HasPrefix(or.Addr, "127.0.0.1:") || len(or.Placeholder) != 64 {
		t.Fatalf("open reply = %+v, want an address on 127.0.0.1, no socket and a placeholder", or)
	}
	connect := func(target, auth string) (string, string) {
		c, err := net.Dial("tcp", or.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
		if auth != "" {
			req += "Proxy-Authorization: " + auth + "\r\n"
		}
		io.WriteString(c, req+"\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		if err != nil {
			t.Fatalf("CONNECT %s: %v", target, err)
		}
		defer resp.Body.Close()
		return resp.Status, resp.Header.Get("X-Anet-Reason")
	}
	token := "Basic " + base64.StdEncoding.EncodeToString([]byte("anet:"+or.Placeholder))
	if st, why := connect("example.com:443", ""); !strings.HasPrefix(st, "407") || why != string(endpoint.TokenMissing) {
		t.Fatalf("CONNECT without the token = %s (%s), want 407 %s", st, why, endpoint.TokenMissing)
	}
	if st, why := connect("example.com:443", token); !strings.HasPrefix(st, "403") || why != string(egress.HostNotAllowed) {
		t.Fatalf("CONNECT with the token to a host off the list = %s (%s), want 403 %s from the egress rules", st, why, egress.HostNotAllowed)
	}
	if _, err := call(t, h[egresswire.MethodClose], egresswire.MethodClose, egresswire.CloseRequest{RunID: "run-mac"}); err != nil {
		t.Fatalf("close: %v", err)
	}
	if c, err := net.Dial("tcp", or.Addr); err == nil {
		c.Close()
		t.Fatalf("the endpoint still listens on %s after close", or.Addr)
	}
}
