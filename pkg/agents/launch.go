package agents

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// PlaceholderEnv is the variable that holds the run's placeholder for the agents whose config
// file names a variable rather than holding the token (codex env_key, opencode {env:…},
// hermes and openclaw ${…}). The token then stays out of every file.
const PlaceholderEnv = "ANET_PLACEHOLDER"

// Bounds on the parameters. A Linux argv element is at most 128 KiB (MAX_ARG_STRLEN) including
// the NUL and any "--flag=" prefix, so the task stays well below it.
const (
	MaxTaskBytes  = 120 << 10
	maxModelBytes = 200
)

// Params are one run's parameters.
type Params struct {
	Agent Agent
	// Task is the requester's text; it becomes one argv element, verbatim.
	Task string
	// Model is the pinned model (E2); required when Sandboxed, ignored in direct mode.
	Model string
	// Port is the loopback port of the endpoint inside the sandbox; required when Sandboxed.
	Port int
	// Placeholder is the run's endpoint token; required when Sandboxed. It goes into the
	// environment only, never into argv or a file.
	Placeholder string
	// Home is the run's HOME inside the sandbox; "" is sandbox.SandboxHome.
	Home string
	// Tmp and Work are the run's temp and work dirs as the agent sees them; "" is
	// sandbox.SandboxTmp and sandbox.SandboxWork. A backend whose runs see host paths
	// (Seatbelt) has them under the run dir on the host (sandbox.HostRunDirs).
	Tmp, Work string
	// Loopback: the run's endpoint is on the host's loopback (Seatbelt: no network
	// namespace) and refuses a CONNECT without the placeholder (M1), so the proxy URL the
	// agent gets carries the placeholder as its password.
	Loopback bool
	// Sandboxed selects the sandbox settings; false is direct mode (see the package doc).
	Sandboxed bool
}

// File is a config file written into the run's home before the agent starts.
type File struct {
	// Path is relative to HOME, a clean path of plain names.
	Path string `json:"path"`
	// Mode is the file's permission bits.
	Mode uint32 `json:"mode"`
	// Content is the file's bytes.
	Content string `json:"content"`
}

// AnswerKind says where an agent leaves its final answer.
type AnswerKind string

const (
	// AnswerText is stdout as plain text.
	AnswerText AnswerKind = "stdout-text"
	// AnswerClaudeJSON is Claude Code's `-p --output-format json` result object on stdout.
	AnswerClaudeJSON AnswerKind = "stdout-claude-json"
	// AnswerOpencodeJSON is opencode's `run --format json` event lines on stdout.
	AnswerOpencodeJSON AnswerKind = "stdout-opencode-json"
	// AnswerFile is a file the agent writes into the run's work dir.
	AnswerFile AnswerKind = "work-file"
)

// AnswerSource is how to get a run's final answer.
type AnswerSource struct {
	Kind AnswerKind `json:"kind"`
	// File is the answer file's name relative to the work dir (AnswerFile only). The caller
	// removes a stale one before the run and reads it with ReadAnswerFile afterwards.
	File string `json:"file,omitempty"`
}

// Launch is everything the exec back-end needs to start one agent.
type Launch struct {
	// Argv[0] is Spec.Binary; the caller resolves it to an absolute path.
	Argv []string `json:"argv"`
	// Env holds the variables handed to the launcher on top of its base environment; every
	// name passes sandbox.ValidateEnvName. Nil in direct mode.
	Env map[string]string `json:"env,omitempty"`
	// Files are written into the run's home before start. Nil in direct mode.
	Files  []File       `json:"files,omitempty"`
	Answer AnswerSource `json:"answer"`
}

// EnvList returns Env as sorted "NAME=value" entries, the form sandbox.Spec.Env takes.
func (l Launch) EnvList() []string {
	out := make([]string, 0, len(l.Env))
	for k, v := range l.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// answerFileName is the codex answer file in the work dir: the work dir outlives the run (its
// home does not), so the answer can be read after every process of the run is gone.
const answerFileName = ".anet-answer.txt"

// For returns how to start p.Agent for p. cursor in the sandbox and unknown agents are refused
// with agent_unsupported; bad parameters get an error naming the field.
func For(p Params) (Launch, error) {
	spec, ok := table[p.Agent]
	if !ok {
		return Launch{}, fmt.Errorf("agent launch: %w", reasons.New(reasons.AgentUnsupported, fmt.Sprintf("unknown agent %q", p.Agent)))
	}
	if p.Sandboxed && !spec.Sandbox {
		return Launch{}, fmt.Errorf("agent launch: %w", reasons.New(reasons.AgentUnsupported, "agent "+string(p.Agent)))
	}
	if err := p.validate(); err != nil {
		return Launch{}, fmt.Errorf("agent launch %s: %w", p.Agent, err)
	}
	if !p.Sandboxed {
		return direct(p), nil
	}
	if p.Home == "" {
		p.Home = sandbox.SandboxHome
	}
	if p.Tmp == "" {
		p.Tmp = sandbox.SandboxTmp
	}
	if p.Work == "" {
		p.Work = sandbox.SandboxWork
	}
	var (
		l   Launch
		err error
	)
	switch p.Agent {
	case Claude:
		l, err = claude(p)
	case Codex:
		l, err = codex(p)
	case Opencode:
		l, err = opencode(p)
	case Hermes:
		l, err = hermes(p)
	case Openclaw:
		l, err = openclaw(p)
	default:
		err = fmt.Errorf("no sandbox settings for agent %q", p.Agent)
	}
	if err != nil {
		return Launch{}, fmt.Errorf("agent launch %s: %w", p.Agent, err)
	}
	addProxy(l.Env, p)
	// Fail closed at the source: a name the launcher would refuse is a bug here, not there.
	if err := sandbox.ValidateEnv(l.EnvList(), p.Port); err != nil {
		return Launch{}, fmt.Errorf("agent launch %s: %w", p.Agent, err)
	}
	return l, nil
}

// direct is the command line of a trusted agent in the operator's own environment.
func direct(p Params) Launch {
	switch p.Agent {
	case Claude:
		return Launch{Argv: []string{"claude", "-p", "--output-format", "json", "--", p.Task},
			Answer: AnswerSource{Kind: AnswerClaudeJSON}}
	case Codex:
		// Codex exec prints only the final message on stdout (progress goes to stderr).
		return Launch{Argv: []string{"codex", "exec", "--skip-git-repo-check", "--color", "never", "--", p.Task},
			Answer: AnswerSource{Kind: AnswerText}}
	case Opencode:
		return Launch{Argv: []string{"opencode", "run", "--format", "json", "--", p.Task},
			Answer: AnswerSource{Kind: AnswerOpencodeJSON}}
	case Hermes:
		return Launch{Argv: []string{"hermes", "--oneshot=" + p.Task}, Answer: AnswerSource{Kind: AnswerText}}
	case Openclaw:
		// agent exec: the documented headless turn, with the operator's own config, in the
		// run's work dir (its default --cwd), printing only the reply.
		return Launch{Argv: []string{"openclaw", "agent", "exec", "--", p.Task},
			Answer: AnswerSource{Kind: AnswerText}}
	default: // Cursor: print mode, the operator's own login; approvals it needs are rejected.
		return Launch{Argv: []string{"cursor-agent", "-p", "--output-format", "text", "--", p.Task},
			Answer: AnswerSource{Kind: AnswerText}}
	}
}

func (p Params) validate() error {
	var errs []error
	switch {
	case p.Task == "":
		errs = append(errs, errors.New("task: empty"))
	case len(p.Task) > MaxTaskBytes:
		errs = append(errs, fmt.Errorf("task: %d bytes, more than %d (one argv element)", len(p.Task), MaxTaskBytes))
	case strings.IndexByte(p.Task, 0) >= 0:
		errs = append(errs, errors.New("task: contains NUL, which an argv element cannot hold"))
	}
	if !p.Sandboxed {
		return errors.Join(errs...)
	}
	if err := checkModel(p.Model); err != nil {
		errs = append(errs, err)
	}
	if p.Port < 1 || p.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d: want 1-65535", p.Port))
	}
	if err := checkPlaceholder(p.Placeholder); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct{ name, v string }{{"home", p.Home}, {"tmp", p.Tmp}, {"work", p.Work}} {
		if d.v != "" && (!filepath.IsAbs(d.v) || filepath.Clean(d.v) != d.v || strings.ContainsAny(d.v, "\x00\n\"\\")) {
			errs = append(errs, fmt.Errorf("%s %q: want a clean absolute path", d.name, d.v))
		}
	}
	return errors.Join(errs...)
}

// checkModel accepts model ids and aliases ("claude-haiku-5-5", "anthropic/claude-sonnet-4.6",
// "sonnet[1m]"). The narrow set keeps every config format free of quoting surprises; the
// endpoint rewrites the model anyway (E2).
func checkModel(m string) error {
	if m == "" {
		return errors.New("model: empty; the pinned model is required in the sandbox (E2)")
	}
	if len(m) > maxModelBytes {
		return fmt.Errorf("model: %d bytes, more than %d", len(m), maxModelBytes)
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:/@+-[]", c) >= 0) {
			return fmt.Errorf("model %q: character %q not allowed (want letters, digits and . _ : / @ + - [ ])", m, c)
		}
	}
	return nil
}

// checkPlaceholder never puts the token itself into the error.
func checkPlaceholder(ph string) error {
	if len(ph) < 32 || len(ph) > 256 {
		return fmt.Errorf("placeholder: %d characters, want 32-256", len(ph))
	}
	for i := 0; i < len(ph); i++ {
		c := ph[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~') {
			return fmt.Errorf("placeholder: character at offset %d not allowed (want letters, digits and - _ . ~)", i)
		}
	}
	return nil
}

// endpoint is the agent-side base URL of the run's endpoint, without a path.
func endpoint(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

// addProxy points the agent's HTTPS proxy at the run's endpoint, so that curl, git, pip,
// npm, Node and Go clients ask the node for every host they reach (H1, H4): an allowed host
// is tunnelled, and any other is refused with an `anet:` sentence the agent can read, where
// without a proxy it would meet a name that does not resolve and try another way. NO_PROXY
// keeps the model requests to the endpoint direct. Upper and lower case: tools read one or
// the other. On a loopback endpoint (Seatbelt: no network namespace) every CONNECT must carry
// the placeholder (M1), so it goes in as the proxy password; the run's own socket (Linux)
// needs none, and none is handed out.
func addProxy(env map[string]string, p Params) {
	proxy := "http://127.0.0.1:" + strconv.Itoa(p.Port)
	if p.Loopback {
		proxy = "http://anet:" + p.Placeholder + "@127.0.0.1:" + strconv.Itoa(p.Port)
	}
	for _, k := range []string{"HTTPS_PROXY", "https_proxy"} {
		env[k] = proxy
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		env[k] = "127.0.0.1,localhost"
	}
}
