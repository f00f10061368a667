// Package reasons is the one catalog of every reason code the node uses: refusals sent to
// peers, sandbox and egress failures shown to operators, and the `anet:` sentences an agent
// reads when the endpoint refuses a request (E9). A code that is not in this catalog must not
// appear anywhere else; tests check that every code used in the tree is listed here.
package reasons

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Code is a stable, machine-readable reason identifier. Codes are part of the wire format
// and of `--json` output: never rename one.
type Code string

// Kind says who a code is meant for.
type Kind string

const (
	// KindRefusal codes are sent to the requesting peer.
	KindRefusal Kind = "refusal"
	// KindSandbox codes explain why the sandbox is unavailable (operator-facing, F2).
	KindSandbox Kind = "sandbox"
	// KindConfig codes explain a configuration that cannot work (operator-facing, F2).
	KindConfig Kind = "config"
	// KindWarning codes do not stop anything but degrade a guarantee.
	KindWarning Kind = "warning"
	// KindRule codes are endpoint refusals an agent sees, as `anet: <text>` (E9).
	KindRule Kind = "rule"
	// KindNode codes are node-internal failures (helpers, control socket).
	KindNode Kind = "node"
)

// Entry describes one code.
type Entry struct {
	Code Code
	Kind Kind
	// Text is the operator- or agent-facing sentence. For KindRule it is sent as
	// "anet: " + Text, so it names the rule in words an agent can act on.
	Text string
	// Requirement is the requirement number the code enforces, when there is one.
	Requirement string
}

// Refusals sent to peers (F1).
const (
	SandboxUnavailable Code = "sandbox_unavailable"
	Budget             Code = "budget"
)

// Sandbox state codes (F2, S7, L2).
const (
	NoBwrap            Code = "no_bwrap"
	NoRunInit          Code = "no_run_init"
	UsernsBlocked      Code = "userns_blocked"
	UsernsUnavailable  Code = "userns_unavailable"
	SandboxStartFailed Code = "sandbox_start_failed"
	NetnsFailed        Code = "netns_failed"
	SeccompFailed      Code = "seccomp_failed"
	AgentUnsupported   Code = "agent_unsupported"
	PlatformUnsupport  Code = "platform_unsupported"
)

// Configuration codes (F2, E10).
const (
	NoAPIKey  Code = "no_api_key"
	NoAPIBase Code = "no_api_base"
	NoModel   Code = "no_model"
	// AgentMissing: the configured agent's program is not on anetd's PATH (anet doctor says
	// so too, with the command that installs it).
	AgentMissing Code = "agent_missing"
	// AgentRuntimeTooOld: the interpreter the agent's program runs with (its #! line, or
	// auto_reply.agent_runtime) is older than the agent needs; refused before the run.
	AgentRuntimeTooOld Code = "agent_runtime_too_old"
	// AgentFailsInSandbox: the agent's program, started in a sandbox built like a turn's,
	// does not run there (its --version exits non-zero): a turn would fail the same way.
	AgentFailsInSandbox Code = "agent_fails_in_sandbox"
)

// Warnings (S6, N1, N2).
const (
	NoCgroupLimits     Code = "no_cgroup_limits"
	DiskLow            Code = "disk_low"
	HelperUnresponsive Code = "helper_unresponsive"
)

// Node-internal codes.
const (
	HelperDown      Code = "helper_down"
	Unauthorized    Code = "unauthorized"
	BadRequest      Code = "bad_request"
	MessageTooLarge Code = "message_too_large"
	Internal        Code = "internal"
	// UnknownInteraction and UnknownPeer answer a well-formed id this node does not know.
	UnknownInteraction Code = "unknown_interaction"
	UnknownPeer        Code = "unknown_peer"
	// BadPeerAddr refuses a peer address the sender could not dial (pkg/peeraddr).
	BadPeerAddr Code = "bad_peer_addr"
)

// core is this file's codes. Each file's codes are a static table, and the catalog is built
// from them on its first use, not at start: every program of the node links this package, and
// some (anet-runinit, the first program of every run, above all) never look a code up.
var core = []Entry{
	{SandboxUnavailable, KindRefusal, "the provider's sandbox cannot run this task now; send it again later", "F1"},
	{Budget, KindRefusal, "the provider has used up today's runs or spending for untrusted peers; send it again after the day ends", "B4"},

	{NoBwrap, KindSandbox, "anet-sandboxd finds no bwrap on its PATH (/usr/local/bin:/usr/bin:/bin): install the bubblewrap package", "L1"},
	{NoRunInit, KindSandbox, "anet-runinit, the first program of every run, is missing beside anet-sandboxd: reinstall the anet package", "C4"},
	{UsernsBlocked, KindSandbox, "the AppArmor policy blocks user namespaces for bwrap; install the narrow profile: anet doctor --apparmor-profile | sudo tee /etc/apparmor.d/anet-bwrap >/dev/null && sudo apparmor_parser -r /etc/apparmor.d/anet-bwrap", "L2"},
	{UsernsUnavailable, KindSandbox, "the kernel or container does not allow user namespaces", "F2"},
	{SandboxStartFailed, KindSandbox, "bubblewrap could not set up the sandbox; run `anet doctor --json` and report the result, or set auto_reply.untrusted to off", "F2"},
	{NetnsFailed, KindSandbox, "the network isolation check failed", "S7"},
	{SeccompFailed, KindSandbox, "the system call filter check failed", "S7"},
	{AgentUnsupported, KindSandbox, "this agent cannot run in the sandbox (it cannot send its model requests through the node)", "E10"},
	{PlatformUnsupport, KindSandbox, "this platform has no sandbox; on Windows run the node in WSL2", "O1"},

	{NoAPIKey, KindConfig, "no key for the model service is in the keys file", "F2"},
	{NoAPIBase, KindConfig, "auto_reply.api_base must be set for this agent", "E10"},
	{NoModel, KindConfig, "no model is configured and the upstream has no known cheapest model", "E2"},
	{AgentMissing, KindConfig, "the configured agent (auto_reply.agent) is not installed on anetd's PATH", "F2"},
	{AgentRuntimeTooOld, KindConfig, "the agent's interpreter is older than the agent needs (see anet doctor); install a version it supports and set auto_reply.agent_runtime to that program", "E10"},
	{AgentFailsInSandbox, KindConfig, "the agent's program does not run in a sandbox built like a turn's (anet doctor shows its last words); a turn would fail the same way", "S8"},

	{NoCgroupLimits, KindWarning, "memory and task limits are not available (no user systemd and no delegated cgroup); the other limits still apply", "S6"},
	{DiskLow, KindWarning, "free disk space is below intake.disk_free_min: tasks from peers the node does not know are refused (known peers below half of it, trusted peers below a quarter); free space or lower the floor", "N1"},
	{HelperUnresponsive, KindWarning, "a helper process is running but does not answer; its capability is unavailable, and it is killed and restarted if it stays silent", "N2"},

	{HelperDown, KindNode, "a helper process is not running; its capability is unavailable until it restarts", "C3"},
	{Unauthorized, KindNode, "missing or wrong control token", ""},
	{BadRequest, KindNode, "the request is malformed", ""},
	{MessageTooLarge, KindNode, "the message is larger than the protocol allows", ""},
	{Internal, KindNode, "internal error; see the daemon log", ""},
	{UnknownInteraction, KindNode, "no interaction with that id on this node; `anet inbox` lists tasks received", ""},
	{BadPeerAddr, KindConfig, "a peer address must be HOST:PORT: an IP address or a lower-case host name (letters, digits, '-' and '.'), and a valid port number", "C4"},
	{UnknownPeer, KindNode, "no peer with that aid; `anet peer list` lists them, `anet peer add AID HOST:PORT` adds one", ""},
}

var (
	catalogOnce sync.Once
	catalogMap  map[Code]Entry
)

// catalog returns the one catalog, built on its first use. Register is one: it runs in init
// functions, before anything else looks a code up.
func catalog() map[Code]Entry {
	catalogOnce.Do(func() {
		catalogMap = map[Code]Entry{}
		for _, group := range [][]Entry{core, seatbeltCodes, vmCodes, spendCodes, operatorCodes, wallCodes} {
			for _, e := range group {
				add(catalogMap, e)
			}
		}
	})
	return catalogMap
}

func add(m map[Code]Entry, e Entry) {
	if _, dup := m[e.Code]; dup {
		panic("reasons: duplicate code " + string(e.Code))
	}
	m[e.Code] = e
}

// Register adds codes owned by another package (for example the endpoint's rule catalog).
// It must be called from an init function; a duplicate code panics at start-up.
func Register(entries ...Entry) {
	m := catalog()
	for _, e := range entries {
		add(m, e)
	}
}

// Lookup returns the entry for c.
func Lookup(c Code) (Entry, bool) {
	e, ok := catalog()[c]
	return e, ok
}

// Text returns the sentence for c, or the code itself when it is unknown.
func Text(c Code) string {
	if e, ok := catalog()[c]; ok {
		return e.Text
	}
	return string(c)
}

// All returns every entry sorted by code.
func All() []Entry {
	m := catalog()
	out := make([]Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// Error is an error that carries a reason code. Detail adds context (never a secret).
type Error struct {
	Code   Code
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s: %s", e.Code, Text(e.Code))
	}
	return fmt.Sprintf("%s: %s (%s)", e.Code, Text(e.Code), e.Detail)
}

// New returns an *Error for c with an optional detail.
func New(c Code, detail string) *Error { return &Error{Code: c, Detail: detail} }

// Clip bounds agent- or peer-chosen text that goes into a refusal's detail or a log line to
// at most n bytes plus an ellipsis, cutting at a rune boundary so the result stays valid
// UTF-8 (details end up in JSON and in the evidence chain).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// CodeOf returns the reason code err carries: from a *Error, or from an error with a
// Reason() Code method (the configuration and file rules); "" when it carries none.
func CodeOf(err error) Code {
	var r interface{ Reason() Code }
	if errors.As(err, &r) {
		return r.Reason()
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Message is err's text without a leading "code: " of the code it carries, for a program
// that prints the code on a line of its own: each reason is said once.
func Message(err error) string {
	msg := err.Error()
	if c := CodeOf(err); c != "" {
		msg = strings.TrimPrefix(msg, string(c)+": ")
	}
	return msg
}

// Dedup returns detail without the "code: text" that a detail made from an error of this
// code begins with (and without the parentheses around what follows it), so that a line
// showing the code and its text says them once.
func Dedup(code Code, detail string) string {
	rest, ok := strings.CutPrefix(detail, string(code)+": "+Text(code))
	if !ok {
		return detail
	}
	rest = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
	if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
		rest = rest[1 : len(rest)-1]
	}
	return rest
}
