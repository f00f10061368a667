// Package agents is the per-agent table of the exec back-end (E10): for an
// agent and a run's parameters it returns the command line, the environment and the config
// files that make the agent talk only to the node's endpoint with the run's placeholder, with
// the pinned model, output capped at 8192 tokens, telemetry and provider-run tools (web search,
// web fetch) off, and its own sandbox and approval prompts off. It also says how to read the
// agent's final answer. The package is pure: it starts no process and reads no file except in
// ReadAnswerFile.
//
// Sandboxed runs (P1, P2) get the full treatment: every setting below points at
// http://127.0.0.1:<Port> inside the run's network namespace, where anet-sandboxd's init relays
// to the run's endpoint socket. The agent's own sandbox is off and approvals are never asked:
// nested user namespaces are denied inside ours (S4), and our sandbox is the boundary.
//
// Direct runs (P4, trusted peers, the default mode) are the operator's own: the agent runs as
// the operator's user, in the operator's environment, with the operator's own login, keys and
// agent configuration. The node's endpoint is not available there (it lives on a per-run
// network namespace's loopback that a direct run does not have), and pointing a trusted agent
// at a model proxy the operator did not ask for would be a surprise. Decision: in direct mode
// For returns the command line only (prompt form and answer form); no environment, no files,
// no model pin. The agent's own configuration decides its model, cap and tools; cursor is
// allowed there (its login is the operator's; the node never manages its key).
//
// The task is always one argv element and is never parsed by a shell. Each command line ends
// its options before the task ("--", or the CLI's "--flag=value" form where the task is an
// option's value), so a task such as "--help", "-p" or "review" stays a prompt. Argv[0] is the
// binary's name (Spec.Binary); the caller resolves it to an absolute path before building the
// run spec.
//
// Each agent's settings were checked against the CLI where it installs here (claude 2.1.197 and
// the project's pinned 2.1.328, codex 0.171.0 and the pinned 0.169.0, opencode 1.18.33, each
// run with For's output against a fake upstream in an empty network namespace)
// and openclaw 2026.9.6 on Node 24.21), and against the project's published documentation
// where it does not install (hermes-agent, cursor-agent); the comments in each agent's file
// say which.
package agents

import "anet.dev/anet/pkg/reasons"

// Agent names a coding agent the exec back-end can run.
type Agent string

// The agents of E10.
const (
	Claude   Agent = "claude"
	Codex    Agent = "codex"
	Opencode Agent = "opencode"
	Hermes   Agent = "hermes"
	Openclaw Agent = "openclaw"
	Cursor   Agent = "cursor"
)

// Spec is one row of the table.
type Spec struct {
	Agent Agent
	// Binary is the command name to resolve on PATH.
	Binary string
	// Install says how an operator installs the agent.
	Install string
	// Sandbox reports whether the agent can run in the sandbox (E10: all but cursor).
	Sandbox bool
	// Checked says what the settings were verified against.
	Checked string
	// Runtime is the interpreter the installed program needs (E10); zero for a native binary.
	Runtime Runtime
}

// nodeRuntime is Node with the versions an npm package's "engines" field asks for.
func nodeRuntime(text string, ranges ...VersionRange) Runtime {
	return Runtime{Program: "node", Ranges: ranges, Text: text}
}

var table = map[Agent]Spec{
	// claude 2.1.328 and opencode 1.18.33 install native binaries (bin/claude.exe,
	// bin/opencode.exe): no interpreter. codex.js and openclaw.mjs start with
	// "#!/usr/bin/env node"; the ranges are their package.json "engines".
	Claude: {Agent: Claude, Binary: "claude", Install: "npm install -g @anthropic-ai/claude-code",
		Sandbox: true, Checked: "claude 2.1.197 and 2.1.328 run against a fake upstream"},
	Codex: {Agent: Codex, Binary: "codex", Install: "npm install -g @openai/codex",
		Sandbox: true, Checked: "codex-cli 0.169.0 and 0.171.0 run against a fake upstream (--strict-config)",
		Runtime: nodeRuntime("Node 16 or later", VersionRange{Min: Version{16}})},
	Opencode: {Agent: Opencode, Binary: "opencode", Install: "npm install -g opencode-ai",
		Sandbox: true, Checked: "opencode 1.18.33 run against a fake Chat Completions upstream through the node"},
	Hermes: {Agent: Hermes, Binary: "hermes", Install: "see https://github.com/NousResearch/hermes-agent (Python; not on npm)",
		Sandbox: true, Checked: "hermes-agent documentation (CLI reference, configuration, toolsets)",
		// Not installable here: the version it needs is not checked.
		Runtime: Runtime{Program: "python3", Text: "Python 3 (the version hermes-agent's own docs name)"}},
	Openclaw: {Agent: Openclaw, Binary: "openclaw", Install: "npm install -g openclaw (needs Node >= 24.16 < 25 or >= 26.1)",
		Sandbox: true, Checked: "openclaw 2026.9.6 on Node 24.21 run against a fake Chat Completions upstream through the node",
		Runtime: nodeRuntime("Node >= 24.16 < 25 or >= 26.1",
			VersionRange{Min: Version{24, 16}, Below: Version{25}}, VersionRange{Min: Version{26, 1}})},
	Cursor: {Agent: Cursor, Binary: "cursor-agent", Install: "see https://cursor.com/docs/cli (operator's own login)",
		Sandbox: false, Checked: "cursor CLI documentation (headless print mode)"},
}

// NoAnswer is the code for a run that ended without a usable final answer.
const NoAnswer reasons.Code = "no_answer"

func init() {
	reasons.Register(reasons.Entry{Code: NoAnswer, Kind: reasons.KindNode,
		Text: "the agent ended without a usable answer; see the run's log", Requirement: "P1"})
}

// Lookup returns the table row for name.
func Lookup(name string) (Spec, bool) {
	s, ok := table[Agent(name)]
	return s, ok
}

// ByBinary returns the table row of the sandbox-capable agent whose program is named name
// (the base name of its path), for a launcher that checks the agent runs in its sandbox.
func ByBinary(name string) (Spec, bool) {
	for _, s := range table {
		if s.Binary == name && s.Sandbox {
			return s, true
		}
	}
	return Spec{}, false
}
