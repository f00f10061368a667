package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const (
	testPort        = 4711
	testPlaceholder = "phtest-0123456789abcdef0123456789abcdef"
	testTask        = "Summarise README.md in one line."
)

var sandboxAgents = []Agent{Claude, Codex, Opencode, Hermes, Openclaw}

func testModel(a Agent) string {
	switch a {
	case Claude:
		return "claude-haiku-5-5"
	case Codex:
		return "gpt-6-luna"
	}
	return "llm-pinned-1"
}

func params(a Agent, sandboxed bool) Params {
	return Params{Agent: a, Task: testTask, Model: testModel(a), Port: testPort,
		Placeholder: testPlaceholder, Sandboxed: sandboxed}
}

func mustFor(t *testing.T, p Params) Launch {
	t.Helper()
	l, err := For(p)
	if err != nil {
		t.Fatalf("For(%s, sandboxed=%v) error: %v", p.Agent, p.Sandboxed, err)
	}
	return l
}

// macOSParams are a sandboxed run's parameters on macOS (M1): Seatbelt runs see host paths,
// under the run dir in the node's cache, and reach their endpoint on the host's loopback at
// the port anet-egress chose.
func macOSParams(a Agent) Params {
	p := params(a, true)
	p.Port = 49733
	p.Home = "/Users/op/.cache/anet/runs/r1/home"
	p.Tmp = "/Users/op/.cache/anet/runs/r1/tmp"
	p.Work = "/Users/op/.cache/anet/work-sandbox/aid1/int1"
	p.Loopback = true
	return p
}

// TestForGolden pins each agent's whole launch (argv, env, files, answer) in both modes
// (E10; P4), and sandboxed on macOS (M1). Regenerate with
// `go test ./pkg/agents -run Golden -update`.
func TestForGolden(t *testing.T) {
	for _, a := range append(sandboxAgents, Cursor) {
		for _, mode := range []string{"sandbox", "direct", "sandbox-macos"} {
			if a == Cursor && mode != "direct" {
				continue // refused: TestCursorRefusedInSandbox
			}
			t.Run(string(a)+"/"+mode, func(t *testing.T) {
				p := params(a, mode == "sandbox")
				if mode == "sandbox-macos" {
					p = macOSParams(a)
				}
				l := mustFor(t, p)
				got, err := json.MarshalIndent(l, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, '\n')
				path := filepath.Join("testdata", "golden", string(a)+"-"+mode+".json")
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("read golden %s: %v (run with -update to create it)", path, err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("For(%s, %s) =\n%s\nwant (%s)\n%s", a, mode, got, path, want)
				}
			})
		}
	}
}

// TestEnvNamesPassLauncherValidation: every handed-in variable passes the launcher's own
// checks (S5: sandbox.ValidateEnvName refuses LD_*, NODE_OPTIONS, HOME, …), and the list as a
// whole passes sandbox.ValidateEnv for the run's port.
func TestEnvNamesPassLauncherValidation(t *testing.T) {
	for _, a := range sandboxAgents {
		t.Run(string(a), func(t *testing.T) {
			l := mustFor(t, params(a, true))
			if len(l.Env) == 0 {
				t.Fatalf("For(%s).Env is empty, want the endpoint variables", a)
			}
			for name := range l.Env {
				if err := sandbox.ValidateEnvName(name); err != nil {
					t.Errorf("ValidateEnvName(%q) = %v, want nil", name, err)
				}
			}
			if err := sandbox.ValidateEnv(l.EnvList(), testPort); err != nil {
				t.Errorf("ValidateEnv(For(%s).EnvList()) = %v, want nil", a, err)
			}
		})
	}
}

// TestExactEnv pins the variable names per agent (E1), and the values
// that carry the endpoint, the placeholder and the pinned model.
func TestExactEnv(t *testing.T) {
	base := "http://127.0.0.1:4711"
	cases := []struct {
		agent Agent
		want  map[string]string // "" value: present, value checked elsewhere
	}{
		{Claude, map[string]string{
			"ANTHROPIC_BASE_URL": base, "ANTHROPIC_AUTH_TOKEN": testPlaceholder,
			"ANTHROPIC_MODEL": "claude-haiku-5-5", "ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-haiku-5-5",
			"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-haiku-5-5", "ANTHROPIC_DEFAULT_HAIKU_MODEL": "claude-haiku-5-5",
			"CLAUDE_CODE_SUBAGENT_MODEL": "claude-haiku-5-5", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "8192",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1",
			"DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1",
			"CLAUDE_CODE_TMPDIR": "/tmp",
		}},
		{Codex, map[string]string{"CODEX_HOME": "/home/agent/.codex", "ANET_PLACEHOLDER": testPlaceholder}},
		{Opencode, map[string]string{
			"OPENCODE_CONFIG_CONTENT": "", "ANET_PLACEHOLDER": testPlaceholder,
			"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1",
			"OPENCODE_DISABLE_PROJECT_CONFIG": "1", "OPENCODE_DISABLE_CLAUDE_CODE": "1",
		}},
		{Hermes, map[string]string{"HERMES_HOME": "/home/agent/.hermes", "ANET_PLACEHOLDER": testPlaceholder}},
		{Openclaw, map[string]string{
			"OPENCLAW_LOG_LEVEL": "warn", "ANET_PLACEHOLDER": testPlaceholder,
		}},
	}
	for _, c := range cases {
		// Every agent asks the endpoint for every host it reaches (H1, H4).
		for _, k := range []string{"HTTPS_PROXY", "https_proxy"} {
			c.want[k] = base
		}
		for _, k := range []string{"NO_PROXY", "no_proxy"} {
			c.want[k] = "127.0.0.1,localhost"
		}
		t.Run(string(c.agent), func(t *testing.T) {
			l := mustFor(t, params(c.agent, true))
			if len(l.Env) != len(c.want) {
				t.Errorf("len(For(%s).Env) = %d, want %d: %v", c.agent, len(l.Env), len(c.want), l.EnvList())
			}
			for k, v := range c.want {
				got, ok := l.Env[k]
				switch {
				case !ok:
					t.Errorf("For(%s).Env[%s] missing", c.agent, k)
				case v != "" && got != v:
					t.Errorf("For(%s).Env[%s] = %q, want %q", c.agent, k, got, v)
				}
			}
		})
	}
}

// TestDirectModeIsArgvOnly: direct mode (P4) hands the agent nothing of the node's (no
// environment, no files, no endpoint, no placeholder): the operator's own configuration
// decides. Documented in the package comment.
func TestDirectModeIsArgvOnly(t *testing.T) {
	for _, a := range append(sandboxAgents, Cursor) {
		t.Run(string(a), func(t *testing.T) {
			l := mustFor(t, params(a, false))
			if l.Env != nil || l.Files != nil {
				t.Errorf("For(%s, direct) env=%v files=%v, want none", a, l.Env, l.Files)
			}
			all := strings.Join(l.Argv, "\x00")
			for _, s := range []string{testPlaceholder, "127.0.0.1", testModel(a)} {
				if strings.Contains(all, s) {
					t.Errorf("For(%s, direct).Argv = %q contains %q", a, l.Argv, s)
				}
			}
			spec, _ := Lookup(string(a))
			if l.Argv[0] != spec.Binary {
				t.Errorf("For(%s, direct).Argv[0] = %q, want %q", a, l.Argv[0], spec.Binary)
			}
		})
	}
	// Direct mode needs no model, port or placeholder.
	if _, err := For(Params{Agent: Codex, Task: "x"}); err != nil {
		t.Errorf("For(codex direct, no model/port/placeholder) = %v, want nil", err)
	}
}

// TestCursorRefusedInSandbox: E10, F2 — cursor cannot route its model requests through the
// node, so a sandboxed cursor run is refused with agent_unsupported; unknown agents too.
func TestCursorRefusedInSandbox(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"cursor sandboxed", params(Cursor, true)},
		{"unknown sandboxed", params("aider", true)},
		{"unknown direct", params("aider", false)},
		{"empty agent", params("", true)},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := For(c.p)
			var re *reasons.Error
			if !errors.As(err, &re) || re.Code != reasons.AgentUnsupported {
				t.Fatalf("For(%q) = %v, %v; want a %s error", c.p.Agent, l.Argv, err, reasons.AgentUnsupported)
			}
			if l.Argv != nil {
				t.Errorf("For(%q).Argv = %q, want nil", c.p.Agent, l.Argv)
			}
		})
	}
}

// TestNoAmbientSecretsOrHostPaths: For reads nothing from the caller's environment (an
// operator key set there never reaches the launch), the placeholder appears only in the one
// variable meant to hold it (never argv, never a file), and no host path leaks in: every
// absolute path is under the sandbox's HOME or work dir (S3, S5, F3).
func TestNoAmbientSecretsOrHostPaths(t *testing.T) {
	canaries := map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-canary-4b1d", "OPENAI_API_KEY": "sk-canary-9f3e",
		"ANTHROPIC_AUTH_TOKEN": "canary-auth-77aa", "HTTPS_PROXY": "http://10.9.9.9:3128",
	}
	for k, v := range canaries {
		t.Setenv(k, v)
	}
	t.Setenv("HOME", "/srv/operator-home-canary")
	hostPaths := []string{"/srv/operator-home-canary", mustGetwd(t), os.TempDir() + "/"}
	placeholderVar := map[Agent]string{Claude: "ANTHROPIC_AUTH_TOKEN"}
	for _, a := range sandboxAgents {
		t.Run(string(a), func(t *testing.T) {
			l := mustFor(t, params(a, true))
			var texts []string
			texts = append(texts, l.Argv...)
			for k, v := range l.Env {
				texts = append(texts, k+"="+v)
			}
			for _, f := range l.Files {
				texts = append(texts, f.Path, f.Content)
				if err := linksafe.ValidateRelPath(f.Path); err != nil {
					t.Errorf("file path %q: %v", f.Path, err)
				}
				if f.Mode&0o077 != 0 {
					t.Errorf("file %s mode %o, want no group/other bits", f.Path, f.Mode)
				}
			}
			for _, s := range texts {
				for _, c := range canaries {
					if strings.Contains(s, c) {
						t.Errorf("For(%s) leaks ambient %q in %q", a, c, reasons.Clip(s, 80))
					}
				}
				for _, h := range hostPaths {
					if strings.Contains(s, h) {
						t.Errorf("For(%s) contains host path %q in %q", a, h, reasons.Clip(s, 80))
					}
				}
			}
			want := placeholderVar[a]
			if want == "" {
				want = PlaceholderEnv
			}
			for k, v := range l.Env {
				if has := strings.Contains(v, testPlaceholder); has != (k == want) {
					t.Errorf("For(%s).Env[%s] holds the placeholder = %v, want %v", a, k, has, k == want)
				}
			}
			for _, s := range append(append([]string{}, l.Argv...), fileContents(l)...) {
				if strings.Contains(s, testPlaceholder) {
					t.Errorf("For(%s): placeholder in argv or a file: %q", a, reasons.Clip(s, 80))
				}
			}
		})
	}
}

func fileContents(l Launch) []string {
	var out []string
	for _, f := range l.Files {
		out = append(out, f.Content)
	}
	return out
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestHomeParam: a caller-chosen HOME moves every home-relative setting; the default is the
// launcher's fixed sandbox HOME.
func TestHomeParam(t *testing.T) {
	p := params(Codex, true)
	p.Home = "/home/other"
	l := mustFor(t, p)
	if got := l.Env["CODEX_HOME"]; got != "/home/other/.codex" {
		t.Errorf("For(codex, home=/home/other).Env[CODEX_HOME] = %q, want /home/other/.codex", got)
	}
	if sandbox.SandboxHome != "/home/agent" {
		t.Fatalf("sandbox.SandboxHome = %q: update the golden files and TestExactEnv", sandbox.SandboxHome)
	}
}
