package agents

import (
	"encoding/json"
	"fmt"
	"strconv"

	"anet.dev/anet/pkg/limits"
)

// claude is Claude Code in the sandbox (its documented settings). Checked with
// claude 2.1.197 and 2.1.328 against a fake upstream in an empty network namespace:
//   - one POST /v1/messages?beta=true with "Authorization: Bearer <placeholder>", the pinned
//     model and max_tokens 8192; `--` keeps a task such as "--help" or `-rf "x" $(id)` a prompt;
//   - the settings file's deny list removes WebSearch and WebFetch from the tools sent, and so
//     does --disallowed-tools on its own: -p silently ignores a settings file that fails
//     validation, so the flag keeps them off even then (the "=" form stops the variadic
//     option from taking the next argument);
//   - `--setting-sources user` ignores a .claude/settings.json in the work dir (which could
//     otherwise set env such as ANTHROPIC_BASE_URL or allow rules);
//   - bypassPermissions is refused as root ("--dangerously-skip-permissions cannot be used
//     with root/sudo privileges") unless IS_SANDBOX=1: runs are not root, but a sandbox
//     started by a root daemon maps uid 0 inside, and this is a sandbox.
func claude(p Params) (Launch, error) {
	settings, err := json.MarshalIndent(claudeSettings(), "", "  ")
	if err != nil {
		return Launch{}, fmt.Errorf("claude settings: %w", err)
	}
	env := map[string]string{
		// No /v1: Claude Code appends it.
		"ANTHROPIC_BASE_URL":                       endpoint(p.Port),
		"ANTHROPIC_AUTH_TOKEN":                     p.Placeholder,
		"ANTHROPIC_MODEL":                          p.Model,
		"ANTHROPIC_DEFAULT_OPUS_MODEL":             p.Model,
		"ANTHROPIC_DEFAULT_SONNET_MODEL":           p.Model,
		"ANTHROPIC_DEFAULT_HAIKU_MODEL":            p.Model,
		"CLAUDE_CODE_SUBAGENT_MODEL":               p.Model,
		"CLAUDE_CODE_MAX_OUTPUT_TOKENS":            strconv.Itoa(limits.OutputTokens),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS":   "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"IS_SANDBOX":                               "1",
		// Claude Code keeps its scratch files in /tmp/claude-<uid> unless told: on macOS
		// that is the host's /tmp, which the run may not write; here it is the run's tmp.
		"CLAUDE_CODE_TMPDIR": p.Tmp,
	}
	return Launch{
		Argv: []string{"claude", "-p", "--output-format", "json",
			"--permission-mode", "bypassPermissions", "--disallowed-tools=WebSearch,WebFetch",
			"--setting-sources", "user", "--no-session-persistence", "--", p.Task},
		Env:    env,
		Files:  []File{{Path: ".claude/settings.json", Mode: 0o600, Content: string(settings) + "\n"}},
		Answer: AnswerSource{Kind: AnswerClaudeJSON},
	}, nil
}

type claudePermissions struct {
	Deny        []string `json:"deny"`
	DefaultMode string   `json:"defaultMode"`
}

type claudeSandbox struct {
	Enabled bool `json:"enabled"`
}

type claudeSettingsFile struct {
	Permissions claudePermissions `json:"permissions"`
	// Claude Code's own optional sandbox stays off: nested user namespaces are denied in ours.
	Sandbox claudeSandbox `json:"sandbox"`
	// Nothing is kept past the run anyway (the home is deleted); no background cleanup.
	CleanupPeriodDays int `json:"cleanupPeriodDays"`
}

func claudeSettings() claudeSettingsFile {
	return claudeSettingsFile{
		// Provider-run tools (E4): the endpoint refuses them too; denying them here keeps the
		// agent from offering them to the model at all.
		Permissions:       claudePermissions{Deny: []string{"WebSearch", "WebFetch"}, DefaultMode: "bypassPermissions"},
		Sandbox:           claudeSandbox{Enabled: false},
		CleanupPeriodDays: 1,
	}
}
