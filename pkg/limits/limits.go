// Package limits is the one home of the node's figures: the output cap (E3), the per-run
// endpoint table (R1), the sandbox's resource defaults (S6), the probe's cache time (S7), the
// allow-list cap (H2), the run budget's defaults and slots (B2, B6), the spend caps' defaults
// and the usage estimate (K1, K2), the storage kept for strangers (N1) and the size of a
// task's text. Each figure is written once, here; the packages that enforce, default, validate or
// report one import it, and every sentence that states a figure (a reason text, an `anet:`
// answer, a flag's usage) is built from these values, never typed by hand.
//
// It also says how the operator writes a size (ParseSize, FormatSize: 2GiB, 512MiB), for the
// configuration and anet-sandboxd's flags alike.
//
// The package imports only the standard library, so every binary (the daemon and both
// helpers) links it without linking anything else.
package limits

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Byte units (binary, as the operator writes them in the configuration: 2GiB).
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// OutputTokens caps max_tokens and every equivalent field of a model request, and is what
// the endpoint sets when the field is missing (E3). Agents are told the same figure.
const OutputTokens = 8192

// R1: what one run may do through its endpoint.
const (
	// ModelRequests is the number of model requests a run may make.
	ModelRequests = 60
	// RequestBodyBytes bounds one model request's body.
	RequestBodyBytes = 8 * MiB
	// RequestBytes bounds the model request bodies of a run together.
	RequestBytes = 16 * MiB
	// OpenTunnels bounds the CONNECT tunnels open at once.
	OpenTunnels = 16
	// Tunnels bounds the CONNECT tunnels opened in a run.
	Tunnels = 256
	// TunnelSentBytes bounds what a run sends through all its tunnels together.
	TunnelSentBytes = 32 * MiB
	// TunnelReceivedBytes bounds what a run receives through all its tunnels together.
	TunnelReceivedBytes = 512 * MiB
	// EndpointConnections bounds the connections to a run's endpoint open at once.
	EndpointConnections = 32
)

// S6: a run's resource limits when the operator sets none (auto_reply.sandbox.memory_max,
// tasks_max, disk_max and auto_reply.api_timeout_seconds).
const (
	MemoryBytes = 2 * GiB
	Tasks       = 256
	DiskBytes   = 2 * GiB
	WallClock   = 180 * time.Second
)

// ProbeTTL is how long a passing sandbox probe is trusted (S7).
const ProbeTTL = 5 * time.Minute

// AllowListEntries caps the egress allow-list (H2).
const AllowListEntries = 64

// B2: the run budget for untrusted peers when the operator sets none.
const (
	RunsPerDay        = 20
	RunsPerPeerPerDay = 5
)

// K2: the spend caps for untrusted runs when the operator sets none, in micro-units of the
// price list's currency: 5.00 a day for all peers, 1.00 a peer. At the default (cheapest)
// model a typical run costs about 0.15 and one bounded only by R1 about 0.80 (5.6M input
// tokens estimated from 16 MiB, 60 × 8192 output tokens), so a peer's five runs and the day's
// twenty fit; a dearer pinned model, or abuse, meets the cap instead of the operator's bill.
const (
	SpendPerDayMicros        = 5_000_000
	SpendPerPeerPerDayMicros = 1_000_000
)

// K1: the input tokens assumed for a request whose usage is not known (yet) are its body's
// bytes divided by this: prompt text averages about four bytes a token, so a third errs high.
const EstimateBytesPerToken = 3

// B6: untrusted runs at once, in all and per peer, and how often waiting tasks are looked at.
const (
	UntrustedRuns = 2
	RunsPerPeer   = 1
	ScanInterval  = 5 * time.Second
)

// N1: what the node keeps for peers it does not know when the operator sets nothing
// (intake.stranger_pending_max, intake.strangers_pending_max, intake.disk_free_min).
const (
	StrangerPendingBytes  = 1 * MiB
	StrangersPendingBytes = 64 * MiB
	DiskFreeMinBytes      = 256 * MiB
)

// TaskTextBytes bounds the text of a task or reply: the peer wire format's limit, which the
// CLI, the transport and the openai back-end all check.
const TaskTextBytes = 256 * KiB

// Model is the model-traffic share of R1 for one run, as plain data: anetd sends it inside
// the run's policy (the JSON names are part of that wire format, pkg/egresswire) and
// the model proxy enforces it. A zero field means R1's figure; a policy may lower a figure,
// never raise or remove it.
type Model struct {
	Requests   int64 `json:"requests"`
	BodyBytes  int64 `json:"body_bytes"`
	TotalBytes int64 `json:"total_bytes"`
}

// R1Model returns R1's model figures.
func R1Model() Model {
	return Model{Requests: ModelRequests, BodyBytes: RequestBodyBytes, TotalBytes: RequestBytes}
}

// Check refuses a negative figure and one above R1's. The error names the field, after
// prefix (for example "policy limits.model.").
func (m Model) Check(prefix string) error {
	r := R1Model()
	for _, c := range []struct {
		name     string
		got, max int64
	}{{"requests", m.Requests, r.Requests}, {"body_bytes", m.BodyBytes, r.BodyBytes}, {"total_bytes", m.TotalBytes, r.TotalBytes}} {
		if c.got < 0 || c.got > c.max {
			return fmt.Errorf("%s%s = %d: must be between 0 (default) and %d (R1)", prefix, c.name, c.got, c.max)
		}
	}
	return nil
}

// WithDefaults fills unset (zero or negative) fields with R1's figures.
func (m Model) WithDefaults() Model {
	r := R1Model()
	if m.Requests <= 0 {
		m.Requests = r.Requests
	}
	if m.BodyBytes <= 0 {
		m.BodyBytes = r.BodyBytes
	}
	if m.TotalBytes <= 0 {
		m.TotalBytes = r.TotalBytes
	}
	return m
}

// Bytes writes n for a sentence: with the largest binary unit that divides it exactly
// ("8 MiB", "64 KiB"), else as bytes ("1000 bytes").
func Bytes(n int64) string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
		if n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + " " + u.name
		}
	}
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// sizeUnits are the suffixes a size may carry, largest first so formatting picks the largest
// exact one.
var sizeUnits = []struct {
	suffix string
	n      int64
}{{"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}}

// ParseSize converts "2GiB", "512MiB", "64KiB" or a plain byte count to bytes. Decimal units
// (GB, G) are refused rather than guessed, because 2G and 2GiB differ by 7%.
func ParseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.n
			break
		}
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a size (allowed: a whole number of bytes, or with a KiB, MiB or GiB suffix, e.g. 2GiB)", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// FormatSize writes n with the largest unit that divides it exactly.
func FormatSize(n int64) string {
	for _, u := range sizeUnits {
		if n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
