// Package config is the node's configuration: the YAML schema with its defaults, conversion of
// the file's strings into typed values, validation whose errors name file, line, key and the
// allowed values, the XDG paths the node uses, and the permission checks on private
// directories and the keys file.
//
// The file is parsed as a yaml.v3 node tree rather than unmarshalled into a struct, so that
// unknown keys, duplicate keys and wrong types are errors with line numbers at every level, and
// so that `anet config set` can change one value while keeping the operator's comments.
package config

import (
	"log/slog"
	"time"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/money"
)

// Config is the node's effective configuration. Values are typed: the file's strings are
// converted once, in Parse; Validate checks a Config however it was built.
type Config struct {
	// Listen is the peer listener address (host:port); "" disables the listener.
	Listen string
	// KeysFile overrides <config dir>/keys.yaml when not empty (an absolute path).
	KeysFile string
	// LogLevel is the daemon's log level.
	LogLevel LogLevel
	// AutoReply is the `auto_reply` section.
	AutoReply AutoReply
	// Intake is the `intake` section.
	Intake Intake
	// Dashboard is the `dashboard` section.
	Dashboard Dashboard
}

// Dashboard is the `dashboard` section: the operator's local web view of the node. It is
// off until Listen is set; its pages show peers' text, so it listens on loopback only.
type Dashboard struct {
	// Listen is the dashboard's address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT); ""
	// turns it off.
	Listen string
	// MetricsTokenFile holds the bearer token a scraper must send for /metrics (an absolute
	// path; "" leaves /metrics closed).
	MetricsTokenFile string
}

// Intake is the `intake` section: storage the node keeps for peers it does not know (N1).
// Unanswered tasks are charged their text plus 1 KiB each (the signed copy, the evidence
// entry, the row); answering or refusing a task gives its charge back.
type Intake struct {
	// StrangerPendingMax bounds one stranger key's unanswered tasks, in bytes charged; 0
	// refuses every stranger's task.
	StrangerPendingMax int64
	// StrangersPendingMax bounds all strangers' unanswered tasks together.
	StrangersPendingMax int64
	// DiskFreeMin is the free-space floor: below it strangers' messages are refused with
	// disk_low (known peers' below half of it, trusted peers' below a quarter) and `anet
	// status` warns; 0 turns the guard off.
	DiskFreeMin int64
}

// AutoReply is the `auto_reply` section: how tasks from peers are answered automatically.
type AutoReply struct {
	Backend Backend
	Agent   Agent
	// Trusted is the mode for peers in the trust list (P4): direct, sandbox or off.
	Trusted Mode
	// Untrusted is the mode for every other peer (P1): sandbox or off.
	Untrusted Mode
	// Model is the pinned model (E2); "" means the upstream's cheapest model.
	Model string
	// APIBase is the model service for agents that need one (E10); "" when unset.
	APIBase string
	// AgentRuntime is the interpreter a script agent runs with (an absolute path: a Node
	// from nvm, fnm or a prefix); "" resolves the agent's "#!" line on anetd's PATH (E10).
	AgentRuntime string
	// APITimeout caps a run's wall clock (S6); the file holds it as api_timeout_seconds.
	APITimeout time.Duration
	// WorkDir overrides the unsandboxed work root (S3); "" means <cache>/anet/work.
	WorkDir string
	// WorkRetention is how long a work directory is kept after its run (S3).
	WorkRetention time.Duration
	// EgressAllow lists the host names a sandboxed run may reach (H1–H3); nil when empty.
	EgressAllow []string
	Sandbox     SandboxLimits
}

// SandboxLimits is the `auto_reply.sandbox` section (B2, S6, K2, V1).
type SandboxLimits struct {
	RunsPerDay        int
	RunsPerPeerPerDay int
	// SpendPerDay and SpendPerPeerPerDay cap what untrusted runs may spend on the model per
	// local day, all peers and each peer, in micro-units of the price list's currency (K2).
	// The file writes them as decimals ("5.00"); 0 allows no spend.
	SpendPerDay        money.Micros
	SpendPerPeerPerDay money.Micros
	// MemoryMax and DiskMax are in bytes.
	MemoryMax int64
	TasksMax  int
	DiskMax   int64
	// Isolation is the tier sandboxed runs get (V1); VMAccel what the vm tier may run on.
	Isolation Isolation
	VMAccel   VMAccel
}

// Isolation is the sandbox tier (V1).
type Isolation string

// Isolation tiers: bubblewrap (the agent shares the host kernel, behind namespaces and
// seccomp) or a micro-VM inside the same wall (the agent gets its own kernel).
const (
	IsolationBwrap Isolation = "bwrap"
	IsolationVM    Isolation = "vm"
)

// VMAccel says which accelerators the vm tier may use (V1).
type VMAccel string

// VM accelerators: KVM only (the default), or KVM when a guest boots under it and QEMU's
// software emulation otherwise (seconds per run: the operator must ask for it).
const (
	VMAccelKVM      VMAccel = "kvm"
	VMAccelKVMOrTCG VMAccel = "kvm_or_tcg"
)

// LogLevel is the daemon's log level.
type LogLevel string

// Log levels.
const (
	LogDebug LogLevel = "debug"
	LogInfo  LogLevel = "info"
	LogWarn  LogLevel = "warn"
	LogError LogLevel = "error"
)

// Slog returns the slog level for l; an unknown level maps to info (Validate refuses it).
func (l LogLevel) Slog() slog.Level {
	switch l {
	case LogDebug:
		return slog.LevelDebug
	case LogWarn:
		return slog.LevelWarn
	case LogError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Backend answers a task: by running an agent program (exec) or by calling a model API.
type Backend string

// Backends.
const (
	BackendExec   Backend = "exec"
	BackendOpenAI Backend = "openai"
)

// Agent is the coding agent the exec backend runs.
type Agent string

// Agents (E10 gives each one's upstream).
const (
	AgentClaude   Agent = "claude"
	AgentCodex    Agent = "codex"
	AgentOpencode Agent = "opencode"
	AgentHermes   Agent = "hermes"
	AgentOpenclaw Agent = "openclaw"
	AgentCursor   Agent = "cursor"
)

// Mode says how turns for a class of peers run (P1, P4).
type Mode string

// Modes. ModeDirect is allowed only for trusted peers.
const (
	ModeDirect  Mode = "direct"
	ModeSandbox Mode = "sandbox"
	ModeOff     Mode = "off"
)

// Allowed values, in the order error messages list them.
var (
	logLevels      = []LogLevel{LogDebug, LogInfo, LogWarn, LogError}
	backends       = []Backend{BackendExec, BackendOpenAI}
	agents         = []Agent{AgentClaude, AgentCodex, AgentOpencode, AgentHermes, AgentOpenclaw, AgentCursor}
	trustedModes   = []Mode{ModeDirect, ModeSandbox, ModeOff}
	untrustedModes = []Mode{ModeSandbox, ModeOff}
	isolations     = []Isolation{IsolationBwrap, IsolationVM}
	vmAccels       = []VMAccel{VMAccelKVM, VMAccelKVMOrTCG}
)

// Size units accepted in the file.
const (
	KiB int64 = limits.KiB
	MiB int64 = limits.MiB
	GiB int64 = limits.GiB
)

// Limits on values (S6, and the bounds in the README's configuration).
const (
	minAPITimeout = time.Second
	maxAPITimeout = 86400 * time.Second
	minMemoryMax  = 16 * MiB
	minTasksMax   = 8
	minDiskMax    = 1 * MiB
)

// Default returns the configuration used for every key the file does not set.
func Default() Config {
	return Config{
		Listen:   "127.0.0.1:7420",
		LogLevel: LogInfo,
		AutoReply: AutoReply{
			Backend:       BackendExec,
			Agent:         AgentClaude,
			Trusted:       ModeDirect,
			Untrusted:     ModeSandbox,
			APITimeout:    limits.WallClock,
			WorkRetention: 168 * time.Hour,
			Sandbox: SandboxLimits{
				RunsPerDay:        limits.RunsPerDay,
				RunsPerPeerPerDay: limits.RunsPerPeerPerDay,
				// K2: at the default (cheapest) model a typical run costs about 0.15 and an
				// R1-bounded worst case about 0.80, so one peer's 5 runs fit in 1.00 and the
				// day's 20 in 5.00; a dearer pinned model, or abuse, meets the cap instead.
				SpendPerDay:        money.Micros(limits.SpendPerDayMicros),
				SpendPerPeerPerDay: money.Micros(limits.SpendPerPeerPerDayMicros),
				MemoryMax:          limits.MemoryBytes,
				TasksMax:           limits.Tasks,
				DiskMax:            limits.DiskBytes,
				Isolation:          IsolationBwrap,
				VMAccel:            VMAccelKVM,
			},
		},
		Intake: Intake{
			StrangerPendingMax:  limits.StrangerPendingBytes,
			StrangersPendingMax: limits.StrangersPendingBytes,
			DiskFreeMin:         limits.DiskFreeMinBytes,
		},
	}
}
