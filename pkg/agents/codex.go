package agents

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// codex is Codex CLI in the sandbox (its documented config.toml). Checked with codex-cli 0.169.0 and
// 0.171.0 against a fake upstream in an empty network namespace, with --strict-config (unknown
// keys are an error, so a future Codex that drops one of these keys fails closed instead of
// silently ignoring it):
//   - one POST /v1/responses with "Authorization: Bearer <placeholder>" read from env_key, the
//     pinned model and no tools other than function/namespace ones (web_search disabled);
//   - `model_max_output_tokens` is refused as an unknown field (0.171.0): Codex has no output
//     cap setting and sends no max_output_tokens, so the endpoint sets 8192 (E3);
//   - `--` keeps a task such as "review" (an exec subcommand) or "--help" a prompt;
//   - --output-last-message writes the final message; --ephemeral keeps no session files.
func codex(p Params) (Launch, error) {
	home := path.Join(p.Home, ".codex")
	answer := path.Join(p.Work, answerFileName)
	return Launch{
		Argv: []string{"codex", "exec", "--skip-git-repo-check", "--strict-config", "--ephemeral",
			"--color", "never", "--output-last-message", answer, "--", p.Task},
		Env:    map[string]string{"CODEX_HOME": home, PlaceholderEnv: p.Placeholder},
		Files:  []File{{Path: ".codex/config.toml", Mode: 0o600, Content: codexConfig(p)}},
		Answer: AnswerSource{Kind: AnswerFile, File: answerFileName},
	}, nil
}

func codexConfig(p Params) string {
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	b.WriteString("# Written by the ANet node for one sandboxed run; deleted with the run's home.\n")
	kv("model", tomlString(p.Model))
	kv("model_provider", tomlString("anet"))
	// Our sandbox is the boundary: Codex's own (bwrap/seccomp) cannot nest in it.
	kv("sandbox_mode", tomlString("danger-full-access"))
	kv("approval_policy", tomlString("never"))
	// Otherwise Codex sends a hosted web_search tool every turn (E4).
	kv("web_search", tomlString("disabled"))
	kv("check_for_update_on_startup", "false")
	b.WriteString("\n[model_providers.anet]\n")
	kv("name", tomlString("ANet node endpoint"))
	kv("base_url", tomlString(endpoint(p.Port)+"/v1"))
	kv("env_key", tomlString(PlaceholderEnv))
	kv("wire_api", tomlString("responses"))
	// A 404 to the WebSocket upgrade would make Codex fall back anyway; do not try.
	kv("supports_websockets", "false")
	b.WriteString("\n[analytics]\n")
	kv("enabled", "false")
	b.WriteString("\n[feedback]\n")
	kv("enabled", "false")
	b.WriteString("\n[otel]\n")
	kv("exporter", tomlString("none"))
	b.WriteString("\n[history]\n")
	kv("persistence", tomlString("none"))
	return b.String()
}

// tomlString quotes s as a TOML basic string (TOML 1.0 §String): backslash and quote are
// escaped, every control character and DEL become \uXXXX, invalid UTF-8 becomes U+FFFD.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)) + h)
		default:
			b.WriteRune(r) // RuneError for invalid input: a valid U+FFFD
		}
	}
	b.WriteByte('"')
	return b.String()
}
