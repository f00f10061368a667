package agents

import (
	"encoding/json"
	"fmt"
	"path"

	"gopkg.in/yaml.v3"

	"anet.dev/anet/pkg/limits"
)

// The three agents below reach the operator's api_base service through the endpoint (E10),
// configured as an OpenAI Chat Completions provider at http://127.0.0.1:<Port>/v1; the
// endpoint maps /v1 onto api_base's path. The placeholder stays in ANET_PLACEHOLDER and each
// config names that variable.

// providerID is the provider name every config uses for the endpoint.
const providerID = "anet"

// opencode is opencode in the sandbox. Checked with opencode 1.18.33 against a fake upstream
// in an empty network namespace: POST /v1/chat/completions with "Bearer <placeholder>", the
// pinned model, max_tokens 8192 (from limit.output) and no webfetch/websearch tools. The
// config goes in OPENCODE_CONFIG_CONTENT, the highest-precedence source (above a project
// opencode.json in the work dir, which OPENCODE_DISABLE_PROJECT_CONFIG also turns off).
// @ai-sdk/openai-compatible is bundled; the plugin lookup opencode tries on npm fails closed
// without network and the run goes on. Note: `opencode run` wraps a message argument that
// contains a space in double quotes (escaping inner quotes) before sending it, so the model
// sees such a task quoted; it is still one argument and never a flag after "--".
func opencode(p Params) (Launch, error) {
	cfg := map[string]any{
		"$schema":           "https://opencode.ai/config.json",
		"model":             providerID + "/" + p.Model,
		"small_model":       providerID + "/" + p.Model,
		"enabled_providers": []string{providerID},
		"share":             "disabled",
		"autoupdate":        false,
		"provider": map[string]any{providerID: map[string]any{
			"npm":  "@ai-sdk/openai-compatible",
			"name": "ANet node endpoint",
			"options": map[string]any{
				"baseURL": endpoint(p.Port) + "/v1",
				"apiKey":  "{env:" + PlaceholderEnv + "}",
			},
			"models": map[string]any{p.Model: map[string]any{
				"name":  p.Model,
				"limit": map[string]int{"context": 200000, "output": limits.OutputTokens},
			}},
		}},
		// Provider-run and network tools off (E4); the rest is allowed without asking, as
		// the sandbox is the boundary.
		"permission": map[string]string{
			"webfetch": "deny", "websearch": "deny",
			"edit": "allow", "bash": "allow", "external_directory": "allow",
		},
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return Launch{}, fmt.Errorf("opencode config: %w", err)
	}
	return Launch{
		Argv: []string{"opencode", "run", "--format", "json", "--", p.Task},
		Env: map[string]string{
			"OPENCODE_CONFIG_CONTENT":         string(js),
			PlaceholderEnv:                    p.Placeholder,
			"OPENCODE_DISABLE_MODELS_FETCH":   "1",
			"OPENCODE_DISABLE_AUTOUPDATE":     "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD":   "1",
			"OPENCODE_DISABLE_SHARE":          "1",
			"OPENCODE_DISABLE_PROJECT_CONFIG": "1",
			"OPENCODE_DISABLE_CLAUDE_CODE":    "1",
		},
		Answer: AnswerSource{Kind: AnswerOpencodeJSON},
	}, nil
}

// hermes is hermes-agent (Python) in the sandbox. Not installable here (not on npm); the
// settings follow its documentation: website/docs/reference/cli-commands.md (`-z/--oneshot
// PROMPT` prints only the final answer and auto-bypasses approvals; `--toolsets` applies to
// it), user-guide/configuration.md (`${VAR}` substitution in config.yaml, HERMES_HOME) and
// cli-config.yaml.example (`model: {provider: custom, base_url, api_key, default}`; "output
// token limits are provider-owned", so there is no cap setting and the endpoint sets 8192).
// Toolsets: file and terminal only, so no web, browser or vision tool is offered. The task
// is the value of the long option in "--oneshot=" form, which argparse never reads as a flag.
func hermes(p Params) (Launch, error) {
	cfg := map[string]any{
		"model": map[string]any{
			"provider": "custom",
			"base_url": endpoint(p.Port) + "/v1",
			"api_key":  "${" + PlaceholderEnv + "}",
			"default":  p.Model,
		},
	}
	y, err := yaml.Marshal(cfg)
	if err != nil {
		return Launch{}, fmt.Errorf("hermes config: %w", err)
	}
	return Launch{
		Argv:   []string{"hermes", "--toolsets", "file,terminal", "--oneshot=" + p.Task},
		Env:    map[string]string{"HERMES_HOME": path.Join(p.Home, ".hermes"), PlaceholderEnv: p.Placeholder},
		Files:  []File{{Path: ".hermes/config.yaml", Mode: 0o600, Content: string(y)}},
		Answer: AnswerSource{Kind: AnswerText},
	}, nil
}

// openclaw is OpenClaw in the sandbox. Checked with openclaw 2026.9.6 (on Node 24.21 from the
// npm registry's node package: it needs Node >= 24.16 < 25 or >= 26.1) against a fake
// Chat Completions upstream through the node's sandbox, and against the docs it ships
// (docs/cli/agent.md, docs/gateway/config-agents/workspace-and-bootstrap.md):
//   - `agent exec` is the documented headless entry point "for CI and coding automation": one
//     embedded turn, no Gateway, a temporary state dir removed afterwards, exit 0 only on
//     success, and only the reply on stdout. `agent --local` printed its log lines
//     ("[agent/embedded] …") on stdout around the answer, ran its tools in
//     ~/.openclaw/workspace and pushed the onboarding BOOTSTRAP.md into every first run.
//   - `--config FILE` pins the run to exactly that file ("a missing or invalid file fails the
//     run rather than falling back to defaults"); `--cwd` is the workspace and the tools'
//     working directory, the run's /work; exec "never bootstraps", and
//     agents.defaults.skipBootstrap and .workspace say the same in the file for any path that
//     reads it. logging.level and consoleLevel "warn" (and OPENCLAW_LOG_LEVEL) keep info lines
//     off every stream.
//   - models.providers.<id> {baseUrl, apiKey, api, models[]} with api openai-completions at /v1;
//     `${VAR}` substitution keeps the placeholder in the environment; tools profile "coding"
//     has no web or browser tool and the deny list wins over any allow.
//
// The task follows "--", so commander never reads it as an option.
func openclaw(p Params) (Launch, error) {
	cfg := map[string]any{
		"models": map[string]any{"providers": map[string]any{providerID: map[string]any{
			"baseUrl": endpoint(p.Port) + "/v1",
			"apiKey":  "${" + PlaceholderEnv + "}",
			"api":     "openai-completions",
			"models": []map[string]any{{
				"id": p.Model, "name": p.Model, "reasoning": false, "input": []string{"text"},
				"contextWindow": 200000, "maxTokens": limits.OutputTokens,
			}},
		}}},
		"agents": map[string]any{"defaults": map[string]any{
			"model":         map[string]any{"primary": providerID + "/" + p.Model},
			"workspace":     p.Work,
			"skipBootstrap": true,
		}},
		"tools": map[string]any{
			"profile": "coding",
			"deny":    []string{"web_search", "web_fetch", "browser"},
		},
		"logging": map[string]any{"level": "warn", "consoleLevel": "warn"},
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return Launch{}, fmt.Errorf("openclaw config: %w", err)
	}
	file := path.Join(p.Home, ".openclaw", "openclaw.json")
	return Launch{
		Argv: []string{"openclaw", "agent", "exec", "--config", file, "--cwd", p.Work, "--", p.Task},
		Env: map[string]string{
			"OPENCLAW_LOG_LEVEL": "warn",
			PlaceholderEnv:       p.Placeholder,
		},
		Files:  []File{{Path: ".openclaw/openclaw.json", Mode: 0o600, Content: string(js) + "\n"}},
		Answer: AnswerSource{Kind: AnswerText},
	}, nil
}
