package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
)

// Probe checks a tier adds to describe itself (V1): the vm tier's accelerator, link and
// guest kernel. Status and doctor show them.
const (
	CheckVMAccel     = "vm_accel"
	CheckVMTransport = "vm_transport"
	CheckVMKernel    = "vm_kernel"
)

// Tier describes the vm tier a probe checked, "vm (ACCEL, TRANSPORT)"; "" when the probe
// shows none (the bwrap tier, or a vm probe that failed before choosing).
func (p ProbeResult) Tier() string {
	var accel, transport string
	for _, c := range p.Checks {
		switch c.Name {
		case CheckVMAccel:
			accel, _, _ = strings.Cut(c.Detail, " ")
		case CheckVMTransport:
			transport = c.Detail
		}
	}
	if accel == "" {
		return ""
	}
	return "vm (" + accel + ", " + transport + ")"
}

// ProbeResult is the outcome of a probe: the shared check shape (pkg/check: ok and checks)
// with the sandbox's own fields beside it.
type ProbeResult struct {
	OK bool `json:"ok"`
	// Checks are the S7 properties. A probe that could not get as far as checking them has
	// one failed check, "sandbox", with the reason.
	Checks []check.Check `json:"checks"`
	// Code is the reason the sandbox is unavailable when !OK.
	Code   reasons.Code `json:"code,omitempty"`
	Detail string       `json:"detail,omitempty"`
	// Limits is "full" or "none"; Warnings carries no_cgroup_limits in the latter case.
	Limits CgroupLimits `json:"limits"`
	// Mechanism says how the limits are enforced, in the operator's words ("cgroup v1
	// delegated", "cgroup v2 delegated", "systemd scope", "vm guest cgroup", "none"); ""
	// when the backend does not say.
	Mechanism string `json:"mechanism,omitempty"`
	// MechanismDetail says which subtree or manager, and why no better mechanism was taken
	// (anet doctor shows it); "" when the backend does not say.
	MechanismDetail string         `json:"mechanism_detail,omitempty"`
	Warnings        []reasons.Code `json:"warnings,omitempty"`
	// Shape is what a caller must know of the backend to prepare a run for it.
	Shape RunShape `json:"shape"`
	// ConfigHash identifies the sandbox configuration probed; At is when.
	ConfigHash string    `json:"config_hash"`
	At         time.Time `json:"at"`
	Cached     bool      `json:"cached,omitempty"`
}

// CheckSandbox names the check of a probe that could not run its checks at all.
const CheckSandbox = "sandbox"

// ProbeFailed is a probe that could not run its checks: the sandbox is unavailable with code.
func ProbeFailed(code reasons.Code, detail string) ProbeResult {
	if code == "" {
		code = reasons.SandboxStartFailed
	}
	return ProbeResult{OK: false, Code: code, Detail: detail, At: time.Now(),
		Checks: []check.Check{check.Fail(CheckSandbox, "S7", code, detail)}}
}

// Report is the probe in the shared check shape.
func (p ProbeResult) Report() check.Report {
	return check.Report{OK: p.OK && check.AllOK(p.Checks), Checks: p.Checks}
}

// Err returns the probe failure as a *reasons.Error, or nil.
func (p ProbeResult) Err() error {
	if p.OK {
		return nil
	}
	return reasons.New(p.Code, p.Detail)
}

// ConfigHash hashes the parts that define a sandbox configuration (bwrap path and argv
// template, seccomp programs, limits mechanism) for the probe cache.
func ConfigHash(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		l := len(p)
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}
