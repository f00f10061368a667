//go:build anettest

package endpoint

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/egress"
	"anet.dev/anet/pkg/modelproxy/modelproxytest"
)

// E1, E11, F3 end to end through the unix socket: the agent's request with the placeholder
// reaches the fake api.anthropic.com over verified TLS with the operator's key; the key never
// shows in the endpoint's log, answers or usage.
func TestModelRequestThroughSocketE1F3(t *testing.T) {
	for _, c := range []struct {
		agent, path, body, auth, provider string
	}{
		{"claude", "/v1/messages?beta=true", `{"model":"opus","max_tokens":64000,"messages":[{"role":"user","content":"hi"}]}`, "X-Api-Key", "api.anthropic.com"},
		{"codex", "/v1/responses", `{"model":"gpt-6","input":"hi","store":true}`, "Authorization", "api.openai.com"},
	} {
		t.Run(c.agent, func(t *testing.T) {
			ca, err := testkit.NewCA(c.provider)
			if err != nil {
				t.Fatal(err)
			}
			logs := &modelproxytest.LogBuffer{}
			key := testKey
			k := loadKeys(t, "anthropic: "+key+"\nopenai: "+key+"\n")
			e, err := Open(shortDir(t), Policy{RunID: "r-" + c.agent, Agent: c.agent}, k, nil,
				Options{RootCAs: ca.Pool, Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer e.Close()
			up := modelproxytest.NewUpstream(ca, key, e.Placeholder(), e.Model())
			defer up.Close()
			egress.AnetTestRedirect(c.provider+":443", up.Addr())
			defer egress.AnetTestRedirect(c.provider+":443", "")

			h := http.Header{}
			if c.auth == "X-Api-Key" {
				h.Set("X-Api-Key", e.Placeholder())
			} else {
				h.Set("Authorization", "Bearer "+e.Placeholder())
			}
			h.Set("Cookie", "c="+modelproxytest.AgentCred)
			resp, body := call(t, unixClient(e.SocketPath()), "POST", c.path, h, c.body)
			if resp.StatusCode != 200 || !strings.Contains(body, "hello") {
				t.Fatalf("POST %s = %d %s, want 200 from the fake upstream", c.path, resp.StatusCode, body)
			}
			for _, p := range up.Problems() {
				t.Errorf("fake upstream: %s", p)
			}
			if n := len(up.Requests()); n != 1 {
				t.Fatalf("upstream saw %d requests, want 1", n)
			}
			u := e.Usage()
			if u.Model.Forwarded != 1 || u.Model.BytesFromAgent != int64(len(c.body)) || u.Model.BytesToAgent != int64(len(body)) {
				t.Fatalf("Usage = %+v, want 1 forwarded, %d bytes in, %d out", u.Model, len(c.body), len(body))
			}
			uj, _ := json.Marshal(u)
			e.Close()
			// The handler logs after the answer is sent, and Close does not wait for it.
			testkit.WaitFor(t, "the per-request log line", func() bool { return strings.Contains(logs.String(), `"msg":"model request"`) })
			for name, s := range map[string]string{"log": logs.String(), "usage": string(uj), "answer": body} {
				if strings.Contains(s, key) {
					t.Fatalf("the key appears in the %s: %s", name, s)
				}
			}
		})
	}
}
