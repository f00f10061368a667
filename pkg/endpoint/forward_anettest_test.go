//go:build anettest

package endpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
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
			ca, err := localca.New(c.provider)
			if err != nil {
				t.Fatal(err)
			}
			logs := &standin.LogBuffer{}
			key := testKey
			k := loadKeys(t, "anthropic: "+key+"\nopenai: "+key+"\n")
			e, err := Open(shortDir(t), Policy{RunID: "r-" + c.agent, Agent: c.agent}, k, nil,
				Options{RootCAs: ca.Pool, Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer e.Close()
			up := standin.NewUpstream(ca, key, e.Placeholder(), e.Model())
			defer up.Close()
			dialer.AnetTestRedirect(c.provider+":443", up.Addr())
			defer dialer.AnetTestRedirect(c.provider+":443", "")

			h := http.Header{}
			if c.auth == "X-Api-Key" {
				h.Set("X-Api-Key", e.Placeholder())
			} else {
				h.Set("Authorization", "Bearer "+e.Placeholder())
			}
			h.Set("Cookie", "c="+standin.AgentCred)
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

// K1, K2 through the socket: a run loops on streamed requests until its allowance stops it
// (spend_limit), never past it; a stream still open when the run ends (its wall clock, say)
// is charged its worst case when the endpoint closes, so ending a run early saves nothing.
func TestRunStoppedAtAllowanceK2(t *testing.T) {
	ca, err := localca.New("api.anthropic.com")
	if err != nil {
		t.Fatal(err)
	}
	allowance := money.Micros(20_000) // 0.02: under five worst cases (8192 haiku output tokens ≈ 4100 µ)
	k := loadKeys(t, "anthropic: "+testKey+"\n")
	e, err := Open(shortDir(t), Policy{RunID: "r-loop", Agent: "claude", Allowance: &allowance}, k, nil, Options{RootCAs: ca.Pool, Logger: quiet})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer e.Close()
	up := standin.NewUpstream(ca, testKey, e.Placeholder(), e.Model())
	defer up.Close()
	dialer.AnetTestRedirect("api.anthropic.com:443", up.Addr())
	defer dialer.AnetTestRedirect("api.anthropic.com:443", "")
	up.SetUsage(standin.Usage{Input: 2000, Output: 3000}) // 200 + 1500 = 1700 µ a stream

	c := unixClient(e.SocketPath())
	h := http.Header{"X-Api-Key": {e.Placeholder()}}
	const body = `{"model":"haiku","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"go on"}]}`
	var ok int
	var last string
	for i := 0; i < 60; i++ {
		resp, b := call(t, c, "POST", "/v1/messages", h, body)
		if resp.StatusCode != 200 {
			last = b
			break
		}
		ok++
	}
	if !strings.Contains(last, "anet: "+reasons.Text(reasons.SpendLimit)) {
		t.Fatalf("after %d streams the loop ended with %q, want spend_limit", ok, last)
	}
	u := e.Usage().Model
	if u.Refusals[reasons.SpendLimit] != 1 || u.Spend.Cost > allowance || u.Spend.Responses != int64(ok) || ok < 4 {
		t.Fatalf("usage %+v after %d streams: want one spend_limit, spend within %s", u, ok, allowance)
	}

	// One more stream, held open by the upstream, when the run ends.
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	up.SetStream(func(w http.ResponseWriter, f http.Flusher) {
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
		f.Flush()
		close(started)
		<-release
	})
	before := e.Usage().Model.Spend
	small := `{"model":"haiku","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"x"}]}`
	go func() {
		req, _ := http.NewRequest("POST", "http://endpoint/v1/messages", strings.NewReader(small))
		req.Header.Set("X-Api-Key", e.Placeholder())
		if resp, err := c.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-started
	e.Close()
	after := e.Usage().Model.Spend
	if after.UsageMissing != before.UsageMissing+1 || after.Responses != before.Responses+1 || after.Cost <= before.Cost {
		t.Fatalf("spend before %+v, after the run ended mid-stream %+v: want the open stream charged its estimate", before, after)
	}
	// K1: the receipts add up to the run's spend, the stream the run's end cut included.
	rs := e.Usage().Receipts
	var sum money.Micros
	for _, r := range rs.Model {
		sum += r.Cost
	}
	if last := rs.Model[len(rs.Model)-1]; sum != after.Cost || last.Cost != after.Cost-before.Cost {
		t.Fatalf("receipts cost %s in all (the cut stream %s), want the run's %s (the stream's %s)", sum, last.Cost, after.Cost, after.Cost-before.Cost)
	}
}

// E4, E5, E9 through the socket: a fallbacks[] entry that carries a server-run tool or
// mcp_servers gets the rule's anet: sentence and never reaches the upstream; the same request
// without them is forwarded (the control).
func TestFallbackExtrasNeverReachUpstreamE4(t *testing.T) {
	ca, err := localca.New("api.anthropic.com")
	if err != nil {
		t.Fatal(err)
	}
	k := loadKeys(t, "anthropic: "+testKey+"\n")
	e, err := Open(shortDir(t), Policy{RunID: "r-fallback", Agent: "claude"}, k, nil, Options{RootCAs: ca.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	up := standin.NewUpstream(ca, testKey, e.Placeholder(), e.Model())
	defer up.Close()
	dialer.AnetTestRedirect("api.anthropic.com:443", up.Addr())
	defer dialer.AnetTestRedirect("api.anthropic.com:443", "")
	h := http.Header{"X-Api-Key": {e.Placeholder()}}
	const msg = `"model":"haiku","max_tokens":100,"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ name, fallback, want string }{
		{"web search tool", `{"model":"claude-haiku-5-5","max_tokens":100,"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "anet: tools run by the model service"},
		{"mcp_servers", `{"model":"claude-haiku-5-5","mcp_servers":[{"type":"url","url":"https://mcp.example","name":"x"}]}`, "anet: mcp_servers"},
	} {
		resp, body := call(t, unixClient(e.SocketPath()), "POST", "/v1/messages", h, `{`+msg+`,"fallbacks":[`+tc.fallback+`]}`)
		if resp.StatusCode == 200 || !strings.Contains(body, tc.want) {
			t.Fatalf("%s: %d %s, want a refusal with %q", tc.name, resp.StatusCode, body, tc.want)
		}
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("upstream saw %d requests from refused fallbacks", n)
	}
	resp, body := call(t, unixClient(e.SocketPath()), "POST", "/v1/messages", h, `{`+msg+`,"fallbacks":[{"model":"x","max_tokens":100}]}`)
	if resp.StatusCode != 200 || len(up.Requests()) != 1 {
		t.Fatalf("a clean fallback: %d %s, upstream saw %d; want it forwarded", resp.StatusCode, body, len(up.Requests()))
	}
}

// Q1, E1, E7, F3: runs on the same upstream share one warm connection, and sharing it carries
// nothing of one run into another; a finished run leaves no socket behind. Two runs with
// their own placeholders send requests marked as theirs: the upstream sees one connection,
// the operator's key on every request, and never a placeholder or another run's headers. A run
// opened while another is still open reuses the connection. Once every run has ended, the
// upstream sees its connection closed and this process holds no more descriptors than before.
func TestRunsShareUpstreamConnectionsQ1(t *testing.T) {
	ca, err := localca.New("api.anthropic.com")
	if err != nil {
		t.Fatal(err)
	}
	k := loadKeys(t, "anthropic: "+testKey+"\n")
	open := func(run string) *Endpoint {
		e, err := Open(shortDir(t), Policy{RunID: run, Agent: "claude"}, k, nil,
			Options{RootCAs: ca.Pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatalf("Open(%s): %v", run, err)
		}
		return e
	}
	up := standin.NewUpstream(ca, testKey, "not-a-placeholder-of-these-runs", "claude-haiku-5-5")
	defer up.Close()
	dialer.AnetTestRedirect("api.anthropic.com:443", up.Addr())
	defer dialer.AnetTestRedirect("api.anthropic.com:443", "")
	fdsBefore := countFDs(t)

	a, b := open("run-a"), open("run-b")
	send := func(e *Endpoint, run string) {
		h := http.Header{"X-Api-Key": {e.Placeholder()}, "User-Agent": {"agent-of-" + run},
			"Anthropic-Beta": {"prompt-caching-2024-07-31"}, "Cookie": {"c=" + run + "-" + standin.AgentCred}}
		body := `{"model":"haiku","max_tokens":64,"messages":[{"role":"user","content":"from ` + run + `"}]}`
		resp, got := call(t, unixClient(e.SocketPath()), "POST", "/v1/messages", h, body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: POST = %d %s", run, resp.StatusCode, got)
		}
	}
	for range 3 {
		send(a, "run-a")
		send(b, "run-b")
	}
	a.Close()
	c := open("run-c")
	send(c, "run-c")

	reqs := up.Requests()
	if len(reqs) != 7 {
		t.Fatalf("upstream saw %d requests, want 7", len(reqs))
	}
	secrets := map[string]string{"run-a": a.Placeholder(), "run-b": b.Placeholder(), "run-c": c.Placeholder()}
	for i, r := range reqs {
		var dump strings.Builder
		r.Header.Write(&dump)
		dump.Write(r.Body)
		own := ""
		for run := range secrets {
			if strings.Contains(string(r.Body), "from "+run) {
				own = run
			}
		}
		if own == "" || r.Header.Get("User-Agent") != "agent-of-"+own || r.Header.Get("X-Api-Key") != testKey {
			t.Errorf("request %d: run %q, User-Agent %q, key right %v", i, own, r.Header.Get("User-Agent"), r.Header.Get("X-Api-Key") == testKey)
		}
		for run, ph := range secrets {
			if strings.Contains(dump.String(), ph) {
				t.Errorf("request %d (%s) carries the placeholder of %s", i, own, run)
			}
			if run != own && strings.Contains(dump.String(), run) {
				t.Errorf("request %d (%s) carries something of %s:\n%s", i, own, run, dump.String())
			}
		}
		if r.Remote != reqs[0].Remote {
			t.Errorf("request %d came over %s, request 0 over %s: runs do not share the connection", i, r.Remote, reqs[0].Remote)
		}
	}
	if opened, _ := up.Connections(); opened != 1 {
		t.Errorf("upstream accepted %d connections for three runs, want 1", opened)
	}
	for _, p := range up.Problems() {
		t.Errorf("fake upstream: %s", p)
	}

	b.Close()
	c.Close()
	testkit.WaitFor(t, "the upstream connection closed after the last run", func() bool {
		_, open := up.Connections()
		return open == 0
	})
	testkit.WaitFor(t, "no descriptor left behind", func() bool { return countFDs(t) <= fdsBefore })
}

func countFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}
