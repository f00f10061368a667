package agents

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// fileOf returns the content of l's file at path.
func fileOf(t *testing.T, l Launch, path string) []byte {
	t.Helper()
	for _, f := range l.Files {
		if f.Path == path {
			return []byte(f.Content)
		}
	}
	t.Fatalf("launch has no file %s (files: %v)", path, l.Files)
	return nil
}

// get walks a decoded JSON/YAML/TOML document by keys (strings for maps, ints for lists).
func get(t *testing.T, doc any, keys ...any) any {
	t.Helper()
	cur := doc
	for i, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not a map", keys[:i], cur)
			}
			if cur, ok = m[k]; !ok {
				t.Fatalf("key %v missing (have %v)", keys[:i+1], mapKeys(m))
			}
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: %T is not a list with index %d", keys[:i], cur, k)
			}
			cur = l[k]
		}
	}
	return cur
}

func mapKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

type check struct {
	path []any
	want any
}

func runChecks(t *testing.T, what string, doc any, checks []check) {
	t.Helper()
	for _, c := range checks {
		if got := get(t, doc, c.path...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %v = %#v, want %#v", what, c.path, got, c.want)
		}
	}
}

// parseTOML decodes TOML with Python's tomllib (3.11+), an independent, spec-conforming
// parser; the project has no TOML module and Codex is Rust (serde toml).
func parseTOML(t *testing.T, src []byte) map[string]any {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 (3.11+, for tomllib) is needed to parse the generated TOML independently: %v", err)
	}
	cmd := exec.Command(py, "-c", "import sys,json,tomllib; json.dump(tomllib.load(sys.stdin.buffer), sys.stdout)")
	cmd.Stdin = bytes.NewReader(src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tomllib rejected the TOML: %v: %s\n%s", err, stderr.String(), src)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestClaudeSettingsFile: ~/.claude/settings.json denies the provider-run tools (E4), skips
// permission prompts, and keeps Claude Code's own sandbox off (nested userns is denied, S4).
func TestClaudeSettingsFile(t *testing.T) {
	l := mustFor(t, params(Claude, true))
	var doc map[string]any
	if err := json.Unmarshal(fileOf(t, l, ".claude/settings.json"), &doc); err != nil {
		t.Fatal(err)
	}
	runChecks(t, "claude settings", doc, []check{
		{[]any{"permissions", "deny"}, []any{"WebSearch", "WebFetch"}},
		{[]any{"permissions", "defaultMode"}, "bypassPermissions"},
		{[]any{"sandbox", "enabled"}, false},
	})
	for _, want := range []string{"--permission-mode", "bypassPermissions", "--disallowed-tools=WebSearch,WebFetch", "--setting-sources", "user"} {
		if !contains(l.Argv, want) {
			t.Errorf("claude argv %q lacks %q", l.Argv, want)
		}
	}
}

// TestCodexConfigTOML: config.toml, parsed by an independent TOML parser, points the custom
// provider at the endpoint with the placeholder's variable, pins the model, disables web
// search (E4), and turns Codex's own sandbox and approvals off (ours is the boundary, S4).
func TestCodexConfigTOML(t *testing.T) {
	l := mustFor(t, params(Codex, true))
	doc := parseTOML(t, fileOf(t, l, ".codex/config.toml"))
	runChecks(t, "codex config.toml", doc, []check{
		{[]any{"model"}, "gpt-6-luna"},
		{[]any{"model_provider"}, "anet"},
		{[]any{"model_providers", "anet", "base_url"}, "http://127.0.0.1:4711/v1"},
		{[]any{"model_providers", "anet", "env_key"}, PlaceholderEnv},
		{[]any{"model_providers", "anet", "wire_api"}, "responses"},
		{[]any{"model_providers", "anet", "supports_websockets"}, false},
		{[]any{"web_search"}, "disabled"},
		{[]any{"sandbox_mode"}, "danger-full-access"},
		{[]any{"approval_policy"}, "never"},
		{[]any{"analytics", "enabled"}, false},
		{[]any{"feedback", "enabled"}, false},
		{[]any{"otel", "exporter"}, "none"},
	})
	if l.Env[PlaceholderEnv] != testPlaceholder || l.Env["CODEX_HOME"] != "/home/agent/.codex" {
		t.Errorf("codex env = %v, want %s and CODEX_HOME=/home/agent/.codex", l.EnvList(), PlaceholderEnv)
	}
}

// TestTOMLStringQuoting: tomlString round-trips through tomllib for every kind of character
// a basic string must escape, so no value can break out of its key.
func TestTOMLStringQuoting(t *testing.T) {
	values := []struct{ name, v string }{
		{"plain", "gpt-6-luna"},
		{"quote and newline injection", "x\"\nweb_search = \"live\"\n[model_providers.evil]\nbase_url = \"https://evil\""},
		{"backslashes", `C:\path\to\` + `\u0041`},
		{"control characters", "a\x00b\x01c\x1fd\x7fe\tf\rg"},
		{"unicode", "résumé — 日本語 🚀"},
		{"invalid utf8", "ok\xffend"},
		{"empty", ""},
	}
	var src strings.Builder
	for i, v := range values {
		src.WriteString("k" + string(rune('a'+i)) + " = " + tomlString(v.v) + "\n")
	}
	doc := parseTOML(t, []byte(src.String()))
	if len(doc) != len(values) {
		t.Fatalf("tomllib found %d keys, want %d (a value broke out): %v", len(doc), len(values), doc)
	}
	for i, v := range values {
		t.Run(v.name, func(t *testing.T) {
			want := strings.ToValidUTF8(v.v, "\uFFFD")
			if got := doc["k"+string(rune('a'+i))]; got != want {
				t.Errorf("tomllib(tomlString(%q)) = %q, want %q", v.v, got, want)
			}
		})
	}
}

// TestOpencodeConfigContent: OPENCODE_CONFIG_CONTENT points the provider at the endpoint
// (/v1), takes the key from the placeholder's variable, pins the model, caps output at 8192,
// and denies web fetch/search (E3, E4).
func TestOpencodeConfigContent(t *testing.T) {
	l := mustFor(t, params(Opencode, true))
	var doc map[string]any
	if err := json.Unmarshal([]byte(l.Env["OPENCODE_CONFIG_CONTENT"]), &doc); err != nil {
		t.Fatalf("OPENCODE_CONFIG_CONTENT is not JSON: %v", err)
	}
	runChecks(t, "opencode config", doc, []check{
		{[]any{"model"}, "anet/llm-pinned-1"},
		{[]any{"small_model"}, "anet/llm-pinned-1"},
		{[]any{"enabled_providers"}, []any{"anet"}},
		{[]any{"provider", "anet", "npm"}, "@ai-sdk/openai-compatible"},
		{[]any{"provider", "anet", "options", "baseURL"}, "http://127.0.0.1:4711/v1"},
		{[]any{"provider", "anet", "options", "apiKey"}, "{env:ANET_PLACEHOLDER}"},
		{[]any{"provider", "anet", "models", "llm-pinned-1", "limit", "output"}, float64(8192)},
		{[]any{"permission", "webfetch"}, "deny"},
		{[]any{"permission", "websearch"}, "deny"},
		{[]any{"share"}, "disabled"},
		{[]any{"autoupdate"}, false},
	})
	if l.Files != nil {
		t.Errorf("opencode files = %v, want none (config travels in the environment)", l.Files)
	}
}

// TestHermesConfigYAML: config.yaml's model block is a custom provider at the endpoint with
// the placeholder by ${VAR} substitution and the pinned model.
func TestHermesConfigYAML(t *testing.T) {
	l := mustFor(t, params(Hermes, true))
	var doc map[string]any
	if err := yaml.Unmarshal(fileOf(t, l, ".hermes/config.yaml"), &doc); err != nil {
		t.Fatal(err)
	}
	runChecks(t, "hermes config.yaml", doc, []check{
		{[]any{"model", "provider"}, "custom"},
		{[]any{"model", "base_url"}, "http://127.0.0.1:4711/v1"},
		{[]any{"model", "api_key"}, "${ANET_PLACEHOLDER}"},
		{[]any{"model", "default"}, "llm-pinned-1"},
	})
	if !contains(l.Argv, "file,terminal") || strings.Contains(strings.Join(l.Argv, " "), "web") {
		t.Errorf("hermes argv %q: want --toolsets file,terminal and no web toolset", l.Argv)
	}
}

// TestOpenclawConfigJSON: openclaw.json's provider is the endpoint (/v1 for
// openai-completions), with the placeholder by ${VAR}, the pinned model as primary, output
// capped at 8192 and web tools denied (E2–E4); `agent exec` runs against exactly that file
// with the run's /work as workspace, no bootstrap, and logs at warn (E10).
func TestOpenclawConfigJSON(t *testing.T) {
	l := mustFor(t, params(Openclaw, true))
	var doc map[string]any
	if err := json.Unmarshal(fileOf(t, l, ".openclaw/openclaw.json"), &doc); err != nil {
		t.Fatal(err)
	}
	runChecks(t, "openclaw.json", doc, []check{
		{[]any{"models", "providers", "anet", "baseUrl"}, "http://127.0.0.1:4711/v1"},
		{[]any{"models", "providers", "anet", "apiKey"}, "${ANET_PLACEHOLDER}"},
		{[]any{"models", "providers", "anet", "api"}, "openai-completions"},
		{[]any{"models", "providers", "anet", "models", 0, "id"}, "llm-pinned-1"},
		{[]any{"models", "providers", "anet", "models", 0, "maxTokens"}, float64(8192)},
		{[]any{"agents", "defaults", "model", "primary"}, "anet/llm-pinned-1"},
		{[]any{"tools", "profile"}, "coding"},
		{[]any{"tools", "deny"}, []any{"web_search", "web_fetch", "browser"}},
		{[]any{"agents", "defaults", "workspace"}, "/work"},
		{[]any{"agents", "defaults", "skipBootstrap"}, true},
		{[]any{"logging", "level"}, "warn"},
	})
	// The run is pinned to the written file and its workspace is the run's /work: exec's
	// --config and --cwd, before the "--" that ends the options.
	want := []string{"openclaw", "agent", "exec", "--config", "/home/agent/.openclaw/openclaw.json", "--cwd", "/work", "--"}
	if got := l.Argv[:len(l.Argv)-1]; !slices.Equal(got, want) {
		t.Errorf("openclaw argv = %q, want %q then the task", l.Argv, want)
	}
}

// TestModelInEveryConfig: the pinned model reaches every place an agent picks a model from
// (E2), so no agent falls back to a default of its own (the endpoint rewrites it anyway).
func TestModelInEveryConfig(t *testing.T) {
	for _, a := range sandboxAgents {
		t.Run(string(a), func(t *testing.T) {
			p := params(a, true)
			p.Model = "pinned-model-x9"
			l := mustFor(t, p)
			all := strings.Join(append(l.EnvList(), fileContents(l)...), "\n")
			if n := strings.Count(all, "pinned-model-x9"); n == 0 {
				t.Errorf("For(%s): pinned model appears nowhere in env or files", a)
			}
			if strings.Contains(all, testModel(a)) {
				t.Errorf("For(%s): the default test model %q is still present", a, testModel(a))
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}
