package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/receipt"
)

// H1, H4, E9: the real Claude Code CLI, told by the model to fetch a host that is not on the
// allow-list, runs curl through its Bash tool inside B's sandbox. The node is its proxy
// (HTTPS_PROXY from the run's environment), refuses the CONNECT, and the refusal reaches the
// model in the tool's result, so the agent can stop; the run's receipts show the host asked
// for once, which is curl's own policy (no retry).
func TestRealClaudeReadsTheEgressRefusal(t *testing.T) {
	_, claude := agentBin(t, "claude")
	f := newARFake(t, t.TempDir(), arPinned)
	const host, answer = "files.example.com", "The node refused that host, so I stopped."
	f.up.SetStream(claudeToolThenText(f.up, arPinned, "curl -sS https://"+host+"/", answer))
	b := newARNode(t, f, arOptions{autoReply: "  backend: exec\n  agent: claude\n  untrusted: sandbox\n  api_timeout_seconds: 120\n  egress_allow: [pypi.org]\n", agent: claude})
	a, _, aidB := startPair(t, b)
	id := send(t, a, aidB, "CURL-TOOL: fetch the front page of "+host)
	ans := answerAt(t, a, id)
	if ans.Type != "reply" || strings.TrimSpace(ans.Text) != answer {
		t.Fatalf("A's answer = %+v, want Claude's final text %q", ans, answer)
	}
	// The model got curl's output, and it says the proxy refused the tunnel (not that the
	// name did not resolve).
	var result []byte
	for _, r := range f.up.Requests() {
		if r.Path == "/v1/messages" && bytes.Contains(r.Body, []byte(`"tool_result"`)) {
			result = r.Body
		}
	}
	if result == nil {
		t.Fatal("claude never sent the Bash tool's result back to the model")
	}
	if !bytes.Contains(result, []byte("CONNECT tunnel failed, response 403")) || bytes.Contains(result, []byte("Could not resolve")) {
		t.Fatalf("the tool result the model read does not carry the proxy's 403:\n%s", clipBody(result))
	}
	checkRefusedConnects(t, b, id, host)
}

// H1, H4, E9: the real Codex CLI, told by the model to fetch a host that is not on the
// allow-list, runs curl through its own tools (its exec tool's exec_command) inside B's
// sandbox; the node refuses the CONNECT and the refusal reaches the model as the tool's
// output. The hosts Codex asks for on its own (github.com, chatgpt.com, …) are refused too,
// each asked once, not again and again.
func TestRealCodexReadsTheEgressRefusal(t *testing.T) {
	_, codex := agentBin(t, "codex")
	f := newARFake(t, t.TempDir(), arPinned)
	const pinned, host, answer = "gpt-6-luna", "files.example.com", "Codex stopped: the node refused that host."
	oa := newOpenAIFake(t, f.ca, f.key, pinned, answer)
	js := `const r = await tools.exec_command({cmd: "curl -sS https://` + host + `/"}); text(r);`
	oa.toolCall = func(o map[string]any) map[string]any {
		if hasToolOutput(o) {
			return nil // the tool's result has come back: answer
		}
		return map[string]any{"type": "custom_tool_call", "id": "ctc_anet_1", "call_id": "call_anet_1", "name": "exec", "input": js, "status": "completed"}
	}
	f.openai = oa.Addr()
	b := newARNode(t, f, arOptions{autoReply: "  backend: exec\n  agent: codex\n  untrusted: sandbox\n  api_timeout_seconds: 120\n  egress_allow: [pypi.org]\n", keys: "openai: " + f.key + "\n", agent: codex})
	a, _, aidB := startPair(t, b)
	ansID := send(t, a, aidB, "fetch the front page of "+host)
	ans := answerAt(t, a, ansID)
	if ans.Type != "reply" || !strings.Contains(ans.Text, answer) {
		t.Fatalf("A's answer = %+v, want Codex's final text %q", ans, answer)
	}
	var result []byte
	for _, r := range oa.Requests() {
		if o, err := decodeBody(r.Body); err == nil && hasToolOutput(o) {
			result = r.Body
		}
	}
	if result == nil {
		t.Fatal("codex never sent its tool's output back to the model")
	}
	if !bytes.Contains(result, []byte("CONNECT tunnel failed, response 403")) || bytes.Contains(result, []byte("Could not resolve")) {
		t.Fatalf("the tool output the model read does not carry the proxy's 403:\n%s", toolOutputs(result))
	}
	checkRefusedConnects(t, b, ansID, host)
}

// hasToolOutput says whether a Responses request carries a tool's output back to the model.
func hasToolOutput(o map[string]any) bool {
	in, _ := o["input"].([]any)
	for _, it := range in {
		im, _ := it.(map[string]any)
		if typ, _ := im["type"].(string); strings.HasSuffix(typ, "_call_output") {
			return true
		}
	}
	return false
}

// toolOutputs are the tool output items of a Responses request body, for a failure message.
func toolOutputs(body []byte) string {
	var o struct{ Input []map[string]any }
	if err := json.Unmarshal(body, &o); err != nil {
		return err.Error()
	}
	var out []string
	for _, it := range o.Input {
		if typ, _ := it["type"].(string); strings.HasSuffix(typ, "_call_output") {
			b, _ := json.Marshal(it)
			out = append(out, string(b))
		}
	}
	return strings.Join(out, "\n")
}

// checkRefusedConnects checks the one run's tunnels in B's receipts (anet show): none
// opened, the tool's host refused for the allow-list exactly once (curl does not retry), and
// no host the agent asked for on its own asked again and again: a refusal the agent can
// read ends its attempts at the agent's own retry policy, not at the run's limits.
func checkRefusedConnects(t *testing.T, b *testNode, id, host string) {
	t.Helper()
	var shown control.Interaction
	if err := json.Unmarshal([]byte(b.mustAnet("show", "--json", id)), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Runs) != 1 || shown.Runs[0].Receipts == nil {
		t.Fatalf("anet show %s: %+v, want one run with receipts", id, shown)
	}
	asked := map[string]int{}
	for _, tn := range shown.Runs[0].Receipts.Tunnels {
		if tn.End != receipt.Refused || tn.Code != "egress_host_not_allowed" || tn.Rule != "H4" {
			t.Errorf("tunnel to %s:%d ended %s %s (%s), want refused by the allow-list (H4)", tn.Host, tn.Port, tn.End, tn.Code, tn.Rule)
		}
		asked[tn.Host]++
	}
	t.Logf("hosts the run asked the node for: %v", asked)
	if asked[host] != 1 {
		t.Errorf("the run asked for %s %d times, want curl's one", host, asked[host])
	}
	for h, n := range asked {
		if n > 3 {
			t.Errorf("the run asked for %s %d times after its refusal", h, n)
		}
	}
}

// claudeToolThenText answers the request that offers the Bash tool for the task with one
// Bash tool_use running command, and every later request (the tool's result) with text.
func claudeToolThenText(up *standin.Upstream, model, command, text string) func(http.ResponseWriter, http.Flusher) {
	return func(w http.ResponseWriter, fl http.Flusher) {
		reqs := up.Requests()
		last := reqs[len(reqs)-1].Body
		if bytes.Contains(last, []byte(`"tool_result"`)) || !bytes.Contains(last, []byte("CURL-TOOL")) || !bytes.Contains(last, []byte(`"Bash"`)) {
			streamAnthropicText(model, text)(w, fl)
			return
		}
		input, _ := json.Marshal(map[string]string{"command": command, "description": "Fetch the page"})
		partial, _ := json.Marshal(string(input))
		events := []struct{ name, data string }{
			{"message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_tool_1","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1200,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, model)},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_anet_1","name":"Bash","input":{}}}`},
			{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":%s}}`, partial)},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}`},
			{"message_stop", `{"type":"message_stop"}`},
		}
		for _, e := range events {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data)
			fl.Flush()
		}
	}
}

// clipBody is the tail of a request body for a failure message.
func clipBody(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
