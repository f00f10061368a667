package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
)

// codexConfig is Codex's config.toml for a run (pkg/agents/codex.go): a custom provider at the
// endpoint with the placeholder in tokenEnv, the Responses wire API over HTTP (no WebSocket),
// hosted web search off, and Codex's own sandbox off because ours is the boundary (nested user
// namespaces are denied inside it). Retries are off so that a refusal ends the run at once.
func codexConfig(model, tokenEnv string, port int) string {
	return fmt.Sprintf(`model = %q
model_provider = "anet"
approval_policy = "never"
sandbox_mode = "danger-full-access"
web_search = "disabled"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.anet]
name = "ANet endpoint"
base_url = "http://127.0.0.1:%d/v1"
env_key = %q
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
`, model, port, tokenEnv)
}

// E1–E4, E6, E11, S2, S5, F3: the real `codex exec` in the sandbox completes a turn through the
// endpoint; the fake api.openai.com got the operator's key, never the placeholder, the pinned
// model, store:false, a capped max_output_tokens and no hosted tool.
//
// Codex shapes its request by the model it is configured with: for models its catalog marks
// "responses lite" (gpt-6-luna, the cheapest and so the default pin) it sends its tools in an
// `additional_tools` input item, otherwise (gpt-5.5) as top-level `tools`. Both shapes must
// pass the endpoint; the second case also has the endpoint rewrite Codex's model (E2).
func TestRealCodexCLIThroughSandboxAndEndpoint(t *testing.T) {
	prefix, codex := agentBin(t, "codex")
	const pinned = "gpt-6-luna" // the cheapest OpenAI model: what an empty model pins (E2)
	for _, c := range []struct{ name, codexModel string }{
		{"codex model is the pinned one (tools in an additional_tools input item)", pinned},
		{"codex model gpt-5.5 rewritten to the pinned one (top-level tools)", "gpt-5.5"},
	} {
		t.Run(c.name, func(t *testing.T) { runRealCodex(t, prefix, codex, pinned, c.codexModel) })
	}
}

func runRealCodex(t *testing.T, prefix, codex, pinned, codexModel string) {
	dir := shortTempDir(t, "rc-codex-")
	const tokenEnv = "ANET_ENDPOINT_TOKEN"
	key := "sk-proj-operator-" + randomHex(t, 12)

	ca, err := localca.New("api.openai.com")
	if err != nil {
		t.Fatal(err)
	}
	up := newOpenAIFake(t, ca, key, pinned, codexAnswer)
	ep := startEgressEndpoint(t, dir, `{"run_id":"real-codex","agent":"codex"}`, "openai: "+key+"\n",
		"api.openai.com:443="+up.Addr(), string(ca.PEM))

	// CODEX_HOME holds config.toml. `anet-sandboxd exec` creates the run's home empty and runs
	// only a program inside the agent tree (no shell to copy files in first), so the test seeds
	// CODEX_HOME in the run's work dir, bound at /work. The file is no secret: the placeholder
	// is in the environment.
	work := filepath.Join(dir, "work")
	codexHome := filepath.Join(work, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(codexConfig(codexModel, tokenEnv, realClientPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{tokenEnv + "=" + ep.Placeholder, "CODEX_HOME=/work/.codex"}
	run := runInSandbox(t, dir, ep, realClientPort, prefix, work, env,
		codex, "exec", "--skip-git-repo-check", "--color", "never", "Reply with the agreed token and nothing else.")
	t.Logf("codex in the sandbox: exit %d in %v", run.ExitCode, run.Elapsed.Round(1e6))
	reqs := up.Requests()
	logFake := func() {
		for i, r := range reqs {
			t.Logf("fake saw [%d] %s?%s HTTP/%d\n  headers: %v\n  body: %.3000s", i, r.Path, r.Query, r.Proto, redactHeaders(r.Header, key), r.Body)
		}
		t.Logf("codex stdout: %s\ncodex stderr: %s\noutcome: %s\nendpoint stderr: %s", run.Stdout, run.Stderr, run.Outcome, ep.Stderr)
	}
	if os.Getenv(realClientsDebugEnv) != "" {
		logFake()
	}
	if run.ExitCode != 0 || !strings.Contains(run.Stdout, codexAnswer) {
		logFake()
		t.Fatalf("codex exec in the sandbox: exit %d, stdout %q, want 0 and the fake's answer %q", run.ExitCode, run.Stdout, codexAnswer)
	}
	checkOpenAIRequests(t, reqs, up.Problems(), ep.Placeholder, logFake)
	if strings.Contains(ep.Stderr.String(), key) || strings.Contains(run.Stdout+run.Stderr, key) {
		t.Error("the operator's key appears in the endpoint's log or the run's output (F3)")
	}
}

// checkOpenAIRequests adds to the fake's own per-request checks (key, model, store, caps,
// hosted tools) what only the test knows: the run's placeholder.
func checkOpenAIRequests(t *testing.T, reqs []standin.Recorded, problems []string, placeholder string, logFake func()) {
	t.Helper()
	fail, done := requestFailures(t, problems, logFake)
	defer done()
	responses := 0
	for i, r := range reqs {
		if containsSecret(r.Header, r.Body, placeholder) {
			fail("request %d %s: the run's placeholder reached the upstream (E1, E7)", i, r.Path)
		}
		if r.Path == "/v1/responses" {
			responses++
		}
	}
	if responses == 0 {
		fail("the fake saw no POST /v1/responses (saw %d requests)", len(reqs))
	}
}
