package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
)

// The real clients (E1–E11): the pinned npm builds of Claude Code and
// Codex run inside `anet-sandboxd exec` (S1–S5: the sandbox a run gets, as the unprivileged
// test user) and reach the model only through a test-built `anet-egress endpoint` (E1) whose
// verified upstream is redirected, after every rule, to a fake API over real TLS. The fake
// records what arrived; the tests assert on it.

// realClientPort is the loopback port init relays inside the sandbox (any port works: the run
// has its own network namespace).
const realClientPort = 48123

// The answers the fakes stream; the CLIs must print them.
const (
	claudeAnswer = "ANET-REAL-CLAUDE-OK 7c41"
	codexAnswer  = "ANET-REAL-CODEX-OK 2e9b"
)

// allowedBetasE7 is the node's fixed anthropic-beta list (pkg/modelproxy/rules/headers.go): nothing
// else may reach the upstream.
var allowedBetasE7 = map[string]bool{
	"claude-code-20250219": true, "interleaved-thinking-2025-05-14": true, "context-management-2025-06-27": true,
	"effort-2025-11-24": true, "fine-grained-tool-streaming-2025-05-14": true, "token-efficient-tools-2025-02-19": true,
	"prompt-caching-2024-07-31": true,
}

// streamAnthropicText answers a streamed Messages request with one text block, event by event
// as api.anthropic.com does. Its usage (with cache tokens) costs claudeStreamCost at
// claude-haiku-5-5's prices: 1200×0.10 + 3000×0.125 + 40000×0.01 + 9×0.50 = 899.5 → 900 µ.
func streamAnthropicText(model, text string) func(w http.ResponseWriter, f http.Flusher) {
	return func(w http.ResponseWriter, f http.Flusher) {
		events := []struct{ name, data string }{
			{"message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_real_1","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1200,"cache_creation_input_tokens":3000,"cache_read_input_tokens":40000,"output_tokens":1}}}`, model)},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"ping", `{"type":"ping"}`},
			{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, text)},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`},
			{"message_stop", `{"type":"message_stop"}`},
		}
		for _, e := range events {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data)
			f.Flush()
		}
	}
}

// claudeStreamCost is what one streamAnthropicText answer costs at claude-haiku-5-5 (K1).
const claudeStreamCost = 900

// E1–E3, E7, E11, S2, S5, F3: the real `claude -p` in the sandbox completes a turn through the
// endpoint; the fake api.anthropic.com got the operator's key, never the placeholder, the
// pinned model, max_tokens within the cap and only allowed betas.
func TestRealClaudeCLIThroughSandboxAndEndpoint(t *testing.T) {
	prefix, claude := agentBin(t, "claude")
	dir := shortTempDir(t, "rc-claude-")
	const pinned = "claude-haiku-5-5" // the cheapest Anthropic model: what an empty model pins (E2)
	key := "sk-ant-operator-" + randomHex(t, 12)

	ca, err := localca.New("api.anthropic.com")
	if err != nil {
		t.Fatal(err)
	}
	// The run's placeholder is known only once the endpoint is up, so the fake gets a token that
	// never appears and the test checks the real placeholder itself below.
	up := standin.NewUpstream(ca, key, "unused-"+randomHex(t, 8), pinned)
	defer up.Close()
	up.SetStream(streamAnthropicText(pinned, claudeAnswer))

	ep := startEgressEndpoint(t, dir, `{"run_id":"real-claude","agent":"claude"}`, "anthropic: "+key+"\n",
		"api.anthropic.com:443="+up.Addr(), string(ca.PEM))

	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	env := claudeEnv(ep.Placeholder, pinned, realClientPort)
	run := runInSandbox(t, dir, ep, realClientPort, prefix, work, env,
		claude, "-p", "Reply with the agreed token and nothing else.")
	t.Logf("claude in the sandbox: exit %d in %v", run.ExitCode, run.Elapsed.Round(1e6))
	reqs := up.Requests()
	logFake := func() {
		for i, r := range reqs {
			t.Logf("fake saw [%d] %s?%s HTTP/%d\n  headers: %v\n  body: %.1500s", i, r.Path, r.Query, r.Proto, redactHeaders(r.Header, key), r.Body)
		}
		t.Logf("claude stdout: %s\nclaude stderr: %s\noutcome: %s\nendpoint stderr: %s", run.Stdout, run.Stderr, run.Outcome, ep.Stderr)
	}
	if os.Getenv(realClientsDebugEnv) != "" {
		logFake()
	}
	if run.ExitCode != 0 || !strings.Contains(run.Stdout, claudeAnswer) {
		logFake()
		t.Fatalf("claude -p in the sandbox: exit %d, stdout %q, want 0 and the fake's answer %q", run.ExitCode, run.Stdout, claudeAnswer)
	}
	checkAnthropicRequests(t, reqs, up.Problems(), key, ep.Placeholder, pinned, logFake)
	if strings.Contains(ep.Stderr.String(), key) || strings.Contains(run.Stdout+run.Stderr, key) {
		t.Error("the operator's key appears in the endpoint's log or the run's output (F3)")
	}
}

// claudeEnv is Claude Code's environment for a run (pkg/agents/claude.go).
func claudeEnv(placeholder, model string, port int) []string {
	return []string{
		fmt.Sprintf("ANTHROPIC_BASE_URL=http://127.0.0.1:%d", port),
		"ANTHROPIC_AUTH_TOKEN=" + placeholder,
		"ANTHROPIC_MODEL=" + model,
		"ANTHROPIC_DEFAULT_OPUS_MODEL=" + model,
		"ANTHROPIC_DEFAULT_SONNET_MODEL=" + model,
		"ANTHROPIC_DEFAULT_HAIKU_MODEL=" + model,
		"CLAUDE_CODE_SUBAGENT_MODEL=" + model,
		"CLAUDE_CODE_MAX_OUTPUT_TOKENS=8192",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1",
	}
}

func checkAnthropicRequests(t *testing.T, reqs []standin.Recorded, problems []string, key, placeholder, pinned string, logFake func()) {
	t.Helper()
	fail, done := requestFailures(t, problems, logFake)
	defer done()
	messages := 0
	for i, r := range reqs {
		if r.Header.Get("X-Api-Key") != key {
			fail("request %d %s: x-api-key is not the operator's key (E1)", i, r.Path)
		}
		if containsSecret(r.Header, r.Body, placeholder) {
			fail("request %d %s: the run's placeholder reached the upstream (E1, E7)", i, r.Path)
		}
		for _, line := range r.Header.Values("Anthropic-Beta") {
			for _, b := range strings.Split(line, ",") {
				if b = strings.TrimSpace(b); !allowedBetasE7[b] {
					fail("request %d %s: anthropic-beta %q is not on the allowed list (E7)", i, r.Path, b)
				}
			}
		}
		o, err := decodeBody(r.Body)
		if err != nil {
			fail("request %d %s: body is not JSON: %v", i, r.Path, err)
			continue
		}
		if o["model"] != pinned {
			fail("request %d %s: model = %v, want pinned %s (E2)", i, r.Path, o["model"], pinned)
		}
		if r.Path != "/v1/messages" {
			continue
		}
		messages++
		if mt, ok := jsonInt(o["max_tokens"]); !ok || mt > 8192 {
			fail("request %d: max_tokens = %v, want set and ≤ 8192 (E3)", i, o["max_tokens"])
		}
	}
	if messages == 0 {
		fail("the fake saw no POST /v1/messages (saw %d requests)", len(reqs))
	}
}

// redactHeaders prints headers for a failure log with the operator's key replaced.
func redactHeaders(h http.Header, key string) http.Header {
	out := h.Clone()
	for k, vs := range out {
		for i, v := range vs {
			out[k][i] = strings.ReplaceAll(v, key, "[key]")
		}
	}
	return out
}
