package control

import (
	"encoding/json"
	"time"

	"anet.dev/anet/pkg/privsep"
)

// The types below are the control API's JSON documents, shared by anetd and the CLI (and
// printed by `--json`, so scripts rely on their field names: add fields, never rename).

// Status is the answer to GET /v1/status (`anet status`).
type Status struct {
	AID            string           `json:"aid"`
	Version        string           `json:"version"`
	PID            int              `json:"pid"`
	StartedAt      time.Time        `json:"started_at"`
	UptimeSeconds  int64            `json:"uptime_seconds"`
	ConfigPath     string           `json:"config_path"`
	DataDir        string           `json:"data_dir"`
	ControlSocket  string           `json:"control_socket"`
	Helpers        []privsep.Status `json:"helpers"`
	ProvidersKeyed []string         `json:"providers_with_key"`
	Warnings       []Warning        `json:"warnings"`
	Budget         Budget           `json:"budget"`
}

// Budget is the day's run budget for untrusted peers (B1–B5).
type Budget struct {
	RunsToday         int       `json:"runs_today"`
	RunsPerDay        int       `json:"runs_per_day"`
	RunsPerPeerPerDay int       `json:"runs_per_peer_per_day"`
	Left              int       `json:"left"`
	DayEnds           time.Time `json:"day_ends"`
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
