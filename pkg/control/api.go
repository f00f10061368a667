package control

import (
	"encoding/json"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
)

// The types below are the control API's JSON documents, shared by anetd and the CLI (and
// printed by `--json`, so scripts rely on their field names: add fields, never rename).

// Status is the answer to GET /v1/status (`anet status`).
type Status struct {
	AID           string    `json:"aid"`
	Version       string    `json:"version"`
	PID           int       `json:"pid"`
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds int64     `json:"uptime_seconds"`
	ConfigPath    string    `json:"config_path"`
	DataDir       string    `json:"data_dir"`
	ControlSocket string    `json:"control_socket"`
	ListenAddr    string    `json:"listen_addr"` // the peer listener's bound address; "" when off
	// Dashboard is the web dashboard's bound address (dashboard.listen); "" when off.
	Dashboard      string           `json:"dashboard,omitempty"`
	Helpers        []privsep.Status `json:"helpers"`
	ProvidersKeyed []string         `json:"providers_with_key"`
	Warnings       []Warning        `json:"warnings"`
	Budget         Budget           `json:"budget"`
	// AutoReply is the auto-reply engine's state; Compiled is false in a noautoreply build.
	AutoReply AutoReplyStatus `json:"auto_reply"`
	// Reload is the last reload since start (U3); absent when there was none.
	Reload *ReloadState `json:"reload,omitempty"`
	// Wall is the last proof of the wall, with its failed items only (S7, S8); absent when
	// the chain holds none yet.
	Wall *WallProof `json:"wall,omitempty"`
}

// Why a proof of the wall was made (WallProof.Why).
const (
	WallManual  = "manual"  // anet doctor --prove
	WallDaily   = "daily"   // anetd's timer
	WallReload  = "reload"  // a reload changed the sandbox's settings
	WallUpgrade = "upgrade" // anetd started as another version than the last proof's
	WallStart   = "start"   // anetd started and the last proof is a day old, or there is none
)

// WallProof is a proof of the wall (S7, S8): anetd asks both helpers for their self-tests
// (anet-sandboxd: the probe and the attack battery in a real sandbox of its tier;
// anet-egress: real endpoints attacked against a stand-in upstream) and signs the outcome
// into the evidence chain as one wall_proved entry. While the last one failed, sandboxed
// turns are refused (wall_unproven). POST /v1/wall/prove answers a new one with every item;
// status carries the last one with its failed items.
type WallProof struct {
	At time.Time `json:"at"`
	OK bool      `json:"ok"`
	// Why is what started it: manual, daily, reload, upgrade or start.
	Why string `json:"why"`
	// Tier is the backend anet-sandboxd serves turns with: bwrap, vm or seatbelt.
	Tier string `json:"tier"`
	// Version is the version of the anetd that made it.
	Version string `json:"version"`
	// Seq is its wall_proved entry in the chain; 0 when it could not be recorded.
	Seq int64 `json:"seq"`
	// Failed names the items that failed, in order.
	Failed []string `json:"failed"`
	// Items are its checks: sandbox.probe.NAME, sandbox.attack.NAME, egress.NAME, or
	// sandbox.self-test / egress.self-test when a helper could not run its own.
	Items []check.Check `json:"items"`
}

// HelpersRunning reports whether both helpers (anet-sandboxd, anet-egress) run: anetd is
// ready for runs.
func (s Status) HelpersRunning() bool {
	if len(s.Helpers) != 2 {
		return false
	}
	for _, h := range s.Helpers {
		if h.State != privsep.StateRunning {
			return false
		}
	}
	return true
}

// DoctorView is what anetd and its helpers see, for `anet doctor` (GET /v1/doctor, S8): the
// sandbox probe as the running anet-sandboxd answers it, the agent program as anetd finds it,
// and anet-egress's verdicts on the keys file and on a run of the configured agent.
type DoctorView struct {
	PID int `json:"pid"`
	// Probe is anet-sandboxd's probe answer (the sandbox package's ProbeResult).
	Probe      json.RawMessage `json:"probe,omitempty"`
	ProbeError string          `json:"probe_error,omitempty"`
	// AgentPath is the configured agent's program on anetd's PATH ("" with AgentError).
	AgentPath  string `json:"agent_path,omitempty"`
	AgentError string `json:"agent_error,omitempty"`
	// AgentRuntime is the agent's interpreter and version as a sandboxed turn checks them
	// ("" for a native binary); AgentRuntimeError and its code say why a turn would refuse it.
	AgentRuntime      string       `json:"agent_runtime,omitempty"`
	AgentRuntimeError string       `json:"agent_runtime_error,omitempty"`
	AgentRuntimeCode  reasons.Code `json:"agent_runtime_code,omitempty"`
	// AgentSandbox is the agent's version line as it answered in a sandbox built like a
	// turn's (and its interpreter's, as the run finds it); AgentSandboxError and its code say
	// why it did not answer there. Empty when the probe failed: no turn starts then.
	AgentSandbox      string                `json:"agent_sandbox,omitempty"`
	AgentSandboxError string                `json:"agent_sandbox_error,omitempty"`
	AgentSandboxCode  reasons.Code          `json:"agent_sandbox_code,omitempty"`
	Keys              preflight.KeysVerdict `json:"keys"`
	Run               *preflight.RunVerdict `json:"run,omitempty"`
}

// ReloadState is the outcome of the last reload (SIGHUP, anet reload, a config change by
// the CLI). A refused one left the settings that were in force.
type ReloadState struct {
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Code  string    `json:"code,omitempty"`
	Error string    `json:"error,omitempty"`
}

// ReloadAnswer is the answer to POST /v1/reload (`anet reload`): the new settings are in
// force for every run that starts from now on, except those in RestartNeeded (read, but only
// a restart applies them).
type ReloadAnswer struct {
	OK            bool     `json:"ok"`
	ConfigPath    string   `json:"config_path"`
	RestartNeeded []string `json:"restart_needed"`
}

// Budget is the day's run budget for untrusted peers (B1–B5).
type Budget struct {
	RunsToday         int       `json:"runs_today"`
	RunsPerDay        int       `json:"runs_per_day"`
	RunsPerPeerPerDay int       `json:"runs_per_peer_per_day"`
	Left              int       `json:"left"`
	DayEnds           time.Time `json:"day_ends"`
	// InFlight are untrusted runs in progress; Left counts them as used.
	InFlight  int       `json:"in_flight"`
	DayStarts time.Time `json:"day_starts,omitzero"`
	// Spend is the day's model spend of untrusted runs against the caps (K2).
	Spend SpendBudget `json:"spend"`
}

// SpendBudget is the day's spend in micro-units of the price list's currency (K2): cost of
// counted runs (from the chain), the allowances of runs in flight, and what is left of the
// day's cap (in-flight allowances count as spent).
type SpendBudget struct {
	Spent         money.Micros `json:"spent_micros"`
	InFlight      money.Micros `json:"in_flight_micros"`
	Left          money.Micros `json:"left_micros"`
	PerDay        money.Micros `json:"per_day_micros"`
	PerPeerPerDay money.Micros `json:"per_peer_per_day_micros"`
	// Peers lists every peer that spent today or has a run in flight; Left is what that
	// peer may still spend (its cap, bounded by the day's).
	Peers []PeerSpend `json:"peers"`
}

// PeerSpend is one peer's spend today.
type PeerSpend struct {
	Peer     string       `json:"peer"`
	Spent    money.Micros `json:"spent_micros"`
	InFlight money.Micros `json:"in_flight_micros"`
	Left     money.Micros `json:"left_micros"`
}

// AutoReplyStatus is the auto-reply engine as `anet status` shows it (B6, F2, S6).
type AutoReplyStatus struct {
	Compiled   bool        `json:"compiled"`
	Backend    string      `json:"backend,omitempty"`
	Agent      string      `json:"agent,omitempty"`
	Trusted    string      `json:"trusted,omitempty"`
	Untrusted  string      `json:"untrusted,omitempty"`
	RunsActive int         `json:"runs_active"`
	Active     []ActiveRun `json:"active"`
	// Sandbox is the last probe: "full" or "no_cgroup_limits", or the code that makes it
	// unavailable.
	Sandbox SandboxState `json:"sandbox"`
	// Reasons lists every reason code the engine met since start, with counts.
	Reasons []ReasonCount `json:"reasons"`
}

// ActiveRun is a turn in progress.
type ActiveRun struct {
	Run         string    `json:"run"`
	Peer        string    `json:"peer"`
	Interaction string    `json:"interaction"`
	Route       string    `json:"route"`
	Started     time.Time `json:"started"`
}

// SandboxState is the sandbox's state from the last probe.
type SandboxState struct {
	Probed bool   `json:"probed"`
	OK     bool   `json:"ok"`
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
	Limits string `json:"limits,omitempty"` // full or no_cgroup_limits
	Tier   string `json:"tier,omitempty"`   // bwrap, or vm (ACCEL, TRANSPORT) (V1)
	// Mechanism is how the limits are enforced: cgroup v1 delegated, cgroup v2 delegated,
	// systemd scope, vm guest cgroup, or none.
	Mechanism string    `json:"mechanism,omitempty"`
	At        time.Time `json:"at,omitzero"`
}

// ReasonCount is one reason code the engine met.
type ReasonCount struct {
	Code   string    `json:"code"`
	Text   string    `json:"text"`
	Count  int       `json:"count"`
	Last   time.Time `json:"last"`
	Detail string    `json:"detail,omitempty"`
}

// AutoReplyTest is the answer to POST /v1/autoreply/test (`anet autoreply test`, S8): the
// shared check shape (pkg/check), one check per stage of the turn, with the test's own fields
// beside ok and checks.
type AutoReplyTest struct {
	check.Report
	Trusted bool   `json:"trusted"` // the trusted path was tested (untrusted is off)
	Route   string `json:"route"`
	Answer  string `json:"answer,omitempty"`
	Counted bool   `json:"counted"`
	// RunLog is the file with the run's log (agent stderr, outcome, model calls).
	RunLog string `json:"run_log,omitempty"`
}

// AutoReplyEvent is one line of POST /v1/autoreply/test/stream: a stage's check as the stage
// ends, or, with Progress, how a stage goes while it runs (the agent's elapsed time, its model
// calls), which is shown and not kept in the report.
type AutoReplyEvent struct {
	check.Check
	Progress bool `json:"progress,omitempty"`
}

// Warning is an operator-facing condition with a reason code.
type Warning struct {
	Code   string `json:"code"`
	Text   string `json:"text"`
	Detail string `json:"detail,omitempty"`
}

// VerifyAnswer is the answer to POST /v1/evidence/verify.
type VerifyAnswer struct {
	OK      bool   `json:"ok"`
	Entries int64  `json:"entries"`
	Head    string `json:"head,omitempty"`
	BadSeq  int64  `json:"bad_seq,omitempty"`
	Error   string `json:"error,omitempty"`
}

// EvidenceEntry is one chain entry as GET /v1/evidence returns it (hashes hex, sig base64).
type EvidenceEntry struct {
	Seq         int64           `json:"seq"`
	Time        time.Time       `json:"time"`
	Kind        string          `json:"kind"`
	Peer        string          `json:"peer"`
	Interaction string          `json:"interaction"`
	Details     json.RawMessage `json:"details"`
	PrevHash    string          `json:"prev_hash"`
	Hash        string          `json:"hash"`
	Sig         string          `json:"sig"`
}

// ExportEntry is one event of GET /v1/evidence/export and one line of `anet evidence export
// --jsonl`: a chain entry with EvidenceEntry's fields and, for a turn_completed entry whose
// details name receipts (details.receipts.digest), the run's receipts decoded from the store.
// Receipts that are missing or do not match the digest are not given; ReceiptsError says
// which.
type ExportEntry struct {
	EvidenceEntry
	Receipts      *receipt.Set `json:"receipts,omitempty"`
	ReceiptsError string       `json:"receipts_error,omitempty"`
}

// ExportResult ends GET /v1/evidence/export: the entries exported, the chain's head when the
// export began (entries appended since are left to the next export) and its hash (hex).
type ExportResult struct {
	Entries int64  `json:"entries"`
	HeadSeq int64  `json:"head_seq"`
	Head    string `json:"head,omitempty"`
}

// DashboardLogin is the answer to POST /v1/dashboard/login (`anet dashboard`): a URL that
// logs one browser in to the dashboard, once, before ExpiresAt.
type DashboardLogin struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// SpendHistory is the answer to GET /v1/spend/history?days=N: what counted runs cost per
// local calendar day and per peer (K1, K2), from the run_counted entries of the chain (B5),
// today last.
type SpendHistory struct {
	Days []SpendDay `json:"days"`
}

// SpendDay is one local day's spend: all peers together and each peer that spent.
type SpendDay struct {
	Day   string       `json:"day"` // YYYY-MM-DD in the node's time zone
	Start time.Time    `json:"start"`
	Spent money.Micros `json:"spent_micros"`
	Runs  int64        `json:"runs"`
	Peers []PeerDay    `json:"peers"`
}

// PeerDay is one peer's spend on one day.
type PeerDay struct {
	Peer  string       `json:"peer"`
	Spent money.Micros `json:"spent_micros"`
}

// Peer is a node this node can send tasks to (GET /v1/peers).
type Peer struct {
	AID     string    `json:"aid"`
	Addr    string    `json:"addr"`
	AddedAt time.Time `json:"added_at"`
	Trusted bool      `json:"trusted"`
}

// PeerRequest is the body of POST /v1/peers (`anet peer add AID ADDR`).
type PeerRequest struct {
	AID  string `json:"aid"`
	Addr string `json:"addr"`
}

// TrustEntry is one trusted aid (GET /v1/trust).
type TrustEntry struct {
	AID     string    `json:"aid"`
	AddedAt time.Time `json:"added_at"`
}

// TrustRequest is the body of POST /v1/trust.
type TrustRequest struct {
	AID string `json:"aid"`
}

// SendRequest is the body of POST /v1/send (`anet send --to AID TEXT`).
type SendRequest struct {
	To   string `json:"to"`
	Text string `json:"text"`
}

// ReplyRequest is the body of POST /v1/reply (`anet reply INTERACTION TEXT`). Peer is
// needed only when two peers used the same interaction id.
type ReplyRequest struct {
	Interaction string `json:"interaction"`
	Peer        string `json:"peer,omitempty"`
	Text        string `json:"text"`
}

// Interaction is a task and its answer, in either direction (`anet inbox`, `anet show`).
type Interaction struct {
	Interaction string     `json:"interaction"`
	Peer        string     `json:"peer"`
	Direction   string     `json:"direction"` // "in": the peer asked this node; "out": this node asked
	State       string     `json:"state"`     // in: new, answered, refused; out: waiting, answered, refused
	Text        string     `json:"text"`
	SentAt      time.Time  `json:"sent_at"`
	CreatedAt   time.Time  `json:"created_at"`
	Trusted     bool       `json:"trusted"`
	Answer      *Answer    `json:"answer,omitempty"`
	Delivery    []Delivery `json:"delivery"` // this node's messages of the interaction and their outbox state
	// Runs are the runs this node made for the task, with their tokens and cost (K1; in
	// `anet show` only).
	Runs []Run `json:"runs,omitempty"`
	// RunLogs are the logs of the runs that answered it here (S8): how each ended, what the
	// model service answered, the agent's standard error.
	RunLogs []RunLog `json:"run_logs,omitempty"`
}

// Run is one completed run of an interaction, from its turn_completed evidence (K1).
type Run struct {
	Run          string       `json:"run"`
	At           time.Time    `json:"at"`
	Route        string       `json:"route"`
	Counted      bool         `json:"counted"`
	Model        string       `json:"model,omitempty"`
	Tokens       money.Tokens `json:"tokens"`
	Cost         money.Micros `json:"cost_micros"`
	UsageMissing int64        `json:"usage_missing"`
	// SpendUnknown: the run's usage never arrived; Cost is its whole allowance.
	SpendUnknown bool `json:"spend_unknown,omitempty"`
	// Metered is false for runs whose model calls did not go through the node (direct).
	Metered bool `json:"metered"`
	// Receipts are the run's receipts, from the store: every tunnel and model request of a
	// sandboxed run, how it ended and by which rule (H1–H7, R1, K1). Absent for runs without
	// an endpoint (direct, openai) and when ReceiptsError says why.
	Receipts *receipt.Set `json:"receipts,omitempty"`
	// ReceiptCounts are the digest and counts the run's turn_completed entry carries.
	ReceiptCounts *receipt.Counts `json:"receipt_counts,omitempty"`
	// ReceiptsError says why a sandboxed run shows no receipts: they never arrived, or those
	// stored do not match the chain's digest (`anet evidence verify` names the entry).
	ReceiptsError string `json:"receipts_error,omitempty"`
}

// RunLog is one run's log, kept with the work dirs (auto_reply.work_retention).
type RunLog struct {
	Run  string `json:"run"`
	Text string `json:"text"`
}

// Answer is the reply or refusal of an interaction.
type Answer struct {
	Type  string    `json:"type"` // reply or refusal
	Text  string    `json:"text,omitempty"`
	Code  string    `json:"code,omitempty"`
	Until time.Time `json:"until,omitzero"` // refusal with code budget: when the answering node's day ends
	At    time.Time `json:"at"`
	// Reason and Detail are this node's own reason for a refusal it sent (F2): what the
	// operator fixes (agent_missing with the install command, no_api_key, …), which the
	// requester is not told.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Delivery is the outbox state of one message this node sends.
type Delivery struct {
	MsgID     string    `json:"msg_id"`
	Type      string    `json:"type"`
	State     string    `json:"state"` // pending, delivered, failed
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	DoneAt    time.Time `json:"done_at,omitzero"`
}
