//go:build anettest

package service

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
)

// P3, E2, E3, E6, E1: one chat completion through the model proxy: the pinned model, the cap,
// store:false, the operator's key (and nothing of the agent side) reach the upstream, over
// verified TLS; the answer text comes back.
func TestCompleteThroughProxy(t *testing.T) {
	ca, err := localca.New("api.openai.com", "llm.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, keys, base, host, pinned, path string
	}{
		{"openai", "openai: %s\n", "", "api.openai.com:443", "gpt-6-luna", "/v1/chat/completions"},
		{"custom api_base", "custom: %s\n", "https://llm.example/v1", "llm.example:443", "gpt-6-mini", "/v1/chat/completions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := "sk-complete-" + c.name[:3] + "-7d1e"
			up := standin.NewUpstream(ca, key, "no-placeholder-expected", c.pinned)
			defer up.Close()
			dialer.AnetTestRedirect(c.host, up.Addr())
			defer dialer.AnetTestRedirect(c.host, "")
			s := testServer(t, strings.ReplaceAll(c.keys, "%s", key))
			s.rootCAs = ca.Pool
			model := ""
			if c.base != "" {
				model = c.pinned // a custom service has no catalog: the model must be configured
			}
			rep, err := s.complete(context.Background(), egresswire.CompleteRequest{RunID: "r1", Task: "say hi", APIBase: c.base, Model: model})
			if err != nil || rep.Text != "hello" || rep.Model != c.pinned || rep.Status != 200 {
				t.Fatalf("complete = %+v, %v, want hello from %s", rep, err, c.pinned)
			}
			reqs := up.Requests()
			if len(reqs) != 1 || reqs[0].Path != c.path {
				t.Fatalf("upstream got %d requests (%v), want one at %s", len(reqs), reqs, c.path)
			}
			body := string(reqs[0].Body)
			for _, want := range []string{`"store":false`, `"max_completion_tokens":8192`, `"say hi"`} {
				if !strings.Contains(body, want) {
					t.Fatalf("upstream body %s lacks %s", body, want)
				}
			}
			if p := up.Problems(); len(p) > 0 {
				t.Fatalf("upstream problems: %v", p)
			}
		})
	}
}

// K1, K2: the openai back-end's call is metered like an agent's request (the reply carries
// usage × price) and held to its allowance: a call whose worst case does not fit is refused
// with spend_limit before it leaves.
func TestCompleteMeteredK1K2(t *testing.T) {
	ca, err := localca.New("api.openai.com")
	if err != nil {
		t.Fatal(err)
	}
	const key = "sk-complete-metered-3c9a"
	up := standin.NewUpstream(ca, key, "no-placeholder-expected", "gpt-6-luna")
	defer up.Close()
	up.SetUsage(standin.Usage{Input: 1000, CacheRead: 500, Output: 2000, Reasoning: 300})
	dialer.AnetTestRedirect("api.openai.com:443", up.Addr())
	defer dialer.AnetTestRedirect("api.openai.com:443", "")
	s := testServer(t, "openai: "+key+"\n")
	s.rootCAs = ca.Pool

	// gpt-6-luna: 1000×0.10 + 500×0.01 + 2000×0.50 = 100 + 5 + 1000 = 1105 µ.
	enough := money.Micros(1_000_000)
	rep, err := s.complete(context.Background(), egresswire.CompleteRequest{RunID: "r1", Task: "say hi", Allowance: &enough})
	if err != nil || rep.Text != "hello" || rep.Spend == nil || rep.Spend.Cost != 1105 || rep.Spend.Tokens.Reasoning != 300 {
		t.Fatalf("complete = %+v (spend %+v), %v, want hello costing 1105 µ", rep, rep.Spend, err)
	}
	// The worst case of this call is 8192 output tokens at 0.50 = 4096 µ and more.
	tight := money.Micros(4096)
	_, err = s.complete(context.Background(), egresswire.CompleteRequest{RunID: "r2", Task: "say hi", Allowance: &tight})
	if err == nil || !strings.Contains(err.Error(), string(reasons.SpendLimit)) {
		t.Fatalf("complete with allowance %s = %v, want spend_limit", tight, err)
	}
	if n := len(up.Requests()); n != 1 {
		t.Fatalf("upstream requests = %d, want 1: the refused call must not leave", n)
	}
}

// F3, E1: an upstream that quotes the key it refused does not put it in the reply, which the
// node stores and shows: the proxy redacted it.
func TestCompleteFailureNeverQuotesTheKey(t *testing.T) {
	ca, err := localca.New("api.openai.com")
	if err != nil {
		t.Fatal(err)
	}
	const key = "sk-quoted-by-the-service-4f2a"
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{ca.Cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	dialer.AnetTestRedirect("api.openai.com:443", ln.Addr().String())
	defer dialer.AnetTestRedirect("api.openai.com:443", "")
	s := testServer(t, "openai: "+key+"\n")
	s.rootCAs = ca.Pool
	rep, err := s.complete(context.Background(), egresswire.CompleteRequest{RunID: "r1", Task: "say hi"})
	if err != nil || rep.Status != http.StatusUnauthorized || !strings.Contains(rep.Failed, "Incorrect API key provided: *anet-redacted-key*") {
		t.Fatalf("complete = %+v, %v; want the 401 with the key redacted", rep, err)
	}
	if strings.Contains(rep.Failed, key) {
		t.Fatalf("the reply quotes the key: %s", rep.Failed)
	}
}
