//go:build anettest

package endpoint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/egress"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/receipt"
)

// pypiAddr is the public address the tunnel's resolver gives pypi.org; the dialer's test hook
// sends it to the loopback TLS fake after every check has run.
const pypiAddr = "151.101.0.223"

type fixedResolver map[string][]netip.Addr

func (r fixedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// connectVia sends CONNECT target over the run's socket and returns the connection and the
// answer.
func connectVia(t *testing.T, sock, target string) (net.Conn, *http.Response, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	var body []byte
	if resp.StatusCode/100 != 2 {
		body, _ = io.ReadAll(resp.Body)
	}
	return c, resp, string(body)
}

// TestUsageReceiptsH4K1: a run that made one model request, one refused model request, one
// tunnel and one refused CONNECT reports exactly those four receipts in Usage().Receipts, and
// only there; the set validates, and as anetd reads it from the close reply's usage JSON it
// decodes to the same set with the same digest, and re-encodes to the same bytes.
func TestUsageReceiptsH4K1(t *testing.T) {
	ca, err := localca.New("api.anthropic.com", "pypi.org")
	if err != nil {
		t.Fatal(err)
	}
	tunnelUp := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "pypi saw %s", r.TLS.ServerName)
	}))
	tunnelUp.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Cert}}
	tunnelUp.Config.ErrorLog = log.New(io.Discard, "", 0)
	tunnelUp.StartTLS()
	defer tunnelUp.Close()
	dialer.AnetTestRedirect(pypiAddr+":443", tunnelUp.Listener.Addr().String())
	defer dialer.AnetTestRedirect(pypiAddr+":443", "")

	allow := []string{"pypi.org"}
	tunnel, err := egress.NewProxy(egress.Policy{Allow: allow}, egress.Options{Logger: quiet,
		Resolver: fixedResolver{"pypi.org": {netip.MustParseAddr(pypiAddr)}}})
	if err != nil {
		t.Fatal(err)
	}
	k := loadKeys(t, "anthropic: "+testKey+"\n")
	e, err := Open(shortDir(t), Policy{RunID: "r-receipts", Agent: "claude", Allow: allow}, k, tunnel,
		Options{RootCAs: ca.Pool, Logger: quiet, TunnelUsage: func() any { return tunnel.Usage() }, TunnelReceipts: tunnel.Receipts})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer e.Close()
	up := standin.NewUpstream(ca, testKey, e.Placeholder(), e.Model())
	defer up.Close()
	dialer.AnetTestRedirect("api.anthropic.com:443", up.Addr())
	defer dialer.AnetTestRedirect("api.anthropic.com:443", "")
	up.SetUsage(standin.Usage{Input: 300, Output: 40, CacheRead: 1000})

	c := unixClient(e.SocketPath())
	h := http.Header{"X-Api-Key": {e.Placeholder()}}
	if resp, b := call(t, c, "POST", "/v1/messages", h, `{"model":"haiku","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
		t.Fatalf("model request = %d %s", resp.StatusCode, b)
	}
	if resp, b := call(t, c, "POST", "/v1/messages", h, `{"model":"haiku","max_tokens":100,"mcp_servers":[{"type":"url","url":"https://mcp.example","name":"x"}],"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 400 || resp.Header.Get("X-Anet-Refusal") != string(rules.MCPServersRefused) {
		t.Fatalf("refused model request = %d %s (refusal %q)", resp.StatusCode, b, resp.Header.Get("X-Anet-Refusal"))
	}
	conn, resp, body := connectVia(t, e.SocketPath(), "pypi.org:443")
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT pypi.org:443 = %d %s", resp.StatusCode, body)
	}
	tc := tls.Client(conn, &tls.Config{ServerName: "pypi.org", RootCAs: ca.Pool})
	io.WriteString(tc, "GET / HTTP/1.1\r\nHost: pypi.org\r\nConnection: close\r\n\r\n")
	if got, _ := io.ReadAll(tc); !bytes.Contains(got, []byte("pypi saw pypi.org")) {
		t.Fatalf("through the tunnel: %q", got)
	}
	conn.Close()
	_, resp, body = connectVia(t, e.SocketPath(), "evil.example.com:443")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Anet-Refusal") != string(egress.HostNotAllowed) || !strings.Contains(body, "(rule H4, code egress_host_not_allowed)") {
		t.Fatalf("CONNECT evil.example.com:443 = %d %q, refusal header %q", resp.StatusCode, body, resp.Header.Get("X-Anet-Refusal"))
	}
	e.Close()

	u := e.Usage()
	if u.Receipts == nil {
		t.Fatal("Usage().Receipts is nil")
	}
	s := *u.Receipts
	if err := s.Validate(); err != nil {
		t.Fatalf("receipts do not validate: %v", err)
	}
	if len(s.Model) != 2 || len(s.Tunnels) != 2 || s.DroppedModel != 0 || s.DroppedTunnels != 0 {
		t.Fatalf("receipts = %+v, want 2 model requests and 2 tunnels", s)
	}
	m0, m1, t0, t1 := s.Model[0], s.Model[1], s.Tunnels[0], s.Tunnels[1]
	if t0.Host != "pypi.org" { // receipts are in the order their CONNECTs ended
		t0, t1 = t1, t0
	}
	if m0.End != receipt.Closed || m0.Status != 200 || m0.Model != e.Model() || m0.TokensIn != 1300 || m0.TokensOut != 40 || m0.Cost != u.Model.Spend.Cost || m0.Cost == 0 {
		t.Fatalf("model receipt %+v, want closed 200 with %s, 1300 in, 40 out, the run's cost %d", m0, e.Model(), u.Model.Spend.Cost)
	}
	if m1.End != receipt.Refused || m1.Code != rules.MCPServersRefused || m1.Rule != "E5" || m1.Model != "" {
		t.Fatalf("refused model receipt %+v", m1)
	}
	if t0.End != receipt.Closed || t0.Host != "pypi.org" || t0.SNI != "pypi.org" || t0.Dialled != pypiAddr+":443" || t0.Sent == 0 || t0.Received == 0 {
		t.Fatalf("tunnel receipt %+v", t0)
	}
	if t1.End != receipt.Refused || t1.Code != egress.HostNotAllowed || t1.Rule != "H4" || t1.Host != "evil.example.com" {
		t.Fatalf("refused tunnel receipt %+v", t1)
	}
	if c := receipt.CountsOf(s, nil); c.Tunnels != 2 || c.Model != 2 || c.Refused != 2 {
		t.Fatalf("counts %+v, want 2 tunnels, 2 model requests, 2 refused", c)
	}

	// As anetd gets it: the close reply's usage JSON.
	raw, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		Receipts json.RawMessage            `json:"receipts"`
		Model    map[string]json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	if _, dup := reply.Model["receipts"]; dup {
		t.Fatalf("the model usage carries its receipts too: %s", raw)
	}
	if bytes.Count(raw, []byte(`"api":"anthropic"`)) != 2 || bytes.Count(raw, []byte(`"host":"pypi.org"`)) != 1 {
		t.Fatalf("usage JSON holds a receipt more than once:\n%s", raw)
	}
	got, err := receipt.Decode(reply.Receipts)
	if err != nil {
		t.Fatalf("Decode(usage.receipts): %v\n%s", err, reply.Receipts)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("decoded receipts differ:\n got %+v\nwant %+v", got, s)
	}
	enc, err := receipt.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := receipt.Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, again) || receipt.Digest(enc) != receipt.Digest(again) {
		t.Fatalf("re-encoding changed the bytes:\n%s\n%s", enc, again)
	}
	back, err := receipt.Decode(enc)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("Decode(Encode(receipts)) = %+v, %v", back, err)
	}
}

// TestUsageReceiptsFitOneReplyK1: however many receipts a run leaves, and however long their
// names, the close reply stays within one privsep message; otherwise anetd would get no usage
// at all, the run's spend included. What does not fit is counted as dropped.
func TestUsageReceiptsFitOneReplyK1(t *testing.T) {
	long := receipt.Clip(strings.Repeat("h", 1000))
	var flood []receipt.Tunnel
	for range receipt.MaxPerKind {
		now := time.Now().UTC()
		flood = append(flood, receipt.Tunnel{Host: long, Port: 443, SNI: long, Opened: now, Ended: now, End: receipt.Refused, Code: egress.SNIMismatch, Rule: "H6"})
	}
	e := openTest(t, claudePolicy, nil, Options{Transport: &tripwire{}, TunnelReceipts: func() ([]receipt.Tunnel, int) { return flood, 7 }})
	u := e.Usage()
	usage, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	reply, _ := json.Marshal(egresswire.CloseReply{Usage: usage})
	if len(reply) > privsep.MaxMessage-1024 {
		t.Fatalf("close reply of %d bytes, more than one privsep message (%d) holds with its envelope", len(reply), privsep.MaxMessage)
	}
	s := u.Receipts
	if len(s.Tunnels) == 0 || len(s.Tunnels)+s.DroppedTunnels != receipt.MaxPerKind+7 || s.Validate() != nil {
		t.Fatalf("receipts kept %d tunnels, dropped %d; want the rest of %d counted", len(s.Tunnels), s.DroppedTunnels, receipt.MaxPerKind+7)
	}
}
