package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"anet.dev/anet/pkg/modelproxy/standin"
)

// H1, H4, E9: the real Claude Code CLI, told by the model to fetch a host that is not on the
// allow-list, runs curl through its Bash tool inside B's sandbox. The node is its proxy
// (HTTPS_PROXY from the run's environment), refuses the CONNECT, and the refusal reaches the
// model in the tool's result, so the agent can stop; the node saw the host asked for once,
// which is curl's own policy (no retry), and Claude Code added no attempt of its own.
func TestRealClaudeReadsTheEgressRefusal(t *testing.T) {
	_, claude := agentBin(t, "claude")
	f := newARFake(t, t.TempDir(), arPinned)
	const host, answer = "files.example.com", "The node refused that host, so I stopped."
	f.up.SetStream(claudeToolThenText(f.up, arPinned, "curl -sS https://"+host+"/", answer))
	b := newARNode(t, f, arOptions{autoReply: "  backend: exec\n  agent: claude\n  untrusted: sandbox\n  api_timeout_seconds: 120\n  egress_allow: [pypi.org]\n", agent: claude})
	a, _, aidB := startPair(t, b)
	ans := answerAt(t, a, send(t, a, aidB, "CURL-TOOL: fetch the front page of "+host))
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
	checkOneRefusedConnect(t, b)
}

// checkOneRefusedConnect checks the one run's tunnel usage in B's chain: no tunnel opened and
// exactly one CONNECT refused for the allow-list.
func checkOneRefusedConnect(t *testing.T, b *testNode) {
	t.Helper()
	c := evidence(t, b, "turn_completed")
	if len(c) != 1 {
		t.Fatalf("turn_completed entries = %d, want 1", len(c))
	}
	var d struct {
		Usage struct {
			Tunnel struct {
				TunnelsOpened int            `json:"tunnels_opened"`
				Refusals      map[string]int `json:"refusals"`
			} `json:"tunnel"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(c[0].Details, &d); err != nil {
		t.Fatal(err)
	}
	if got := d.Usage.Tunnel.Refusals["egress_host_not_allowed"]; got != 1 || d.Usage.Tunnel.TunnelsOpened != 0 {
		t.Fatalf("the run's tunnels: %d opened, refusals %v; want the one refused CONNECT of curl", d.Usage.Tunnel.TunnelsOpened, d.Usage.Tunnel.Refusals)
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
