package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
)

// Limit codes say which limit ended a run (or, for cgroup limits, which one it ran into).
const (
	LimitWallClock reasons.Code = "wall_clock"
	LimitDisk      reasons.Code = "disk_limit"
	LimitMemory    reasons.Code = "memory_limit"
	LimitTasks     reasons.Code = "tasks_limit"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: LimitWallClock, Kind: reasons.KindNode, Text: "the run reached its wall-clock limit (api_timeout_seconds) and was stopped", Requirement: "S6"},
		reasons.Entry{Code: LimitDisk, Kind: reasons.KindNode, Text: "the run's home, tmp and work dirs grew past the disk limit and the run was stopped", Requirement: "S6"},
		reasons.Entry{Code: LimitMemory, Kind: reasons.KindNode, Text: "the run reached its memory limit; the kernel killed a process of it", Requirement: "S6"},
		reasons.Entry{Code: LimitTasks, Kind: reasons.KindNode, Text: "the run reached its task limit; further forks failed", Requirement: "S6"},
	)
}

// CgroupLimits is how memory and task limits are enforced for a run.
type CgroupLimits string

const (
	// CgroupFull: limits written and read back from the run's own cgroup (S6 "full").
	CgroupFull CgroupLimits = "full"
	// CgroupNone: no limits (warning no_cgroup_limits).
	CgroupNone CgroupLimits = "none"
)

// Stdio is where a run's standard streams go. Nil means /dev/null. It is not part of the
// serialisable Spec: serve passes descriptors, exec passes its own.
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Launcher is the one seam between whoever asks for a run and whatever starts it. anetd holds
// one: pkg/sandbox/remote's Client, which asks anet-sandboxd over its privsep socket. Inside
// anet-sandboxd, serve answers that client with another (pkg/sandbox/launch: direct runs and
// the platform's isolation backend), and exec, probe and self-test use the same one.
type Launcher interface {
	// Probe checks that sandboxed runs can start here (S7); cached per configuration.
	Probe(ctx context.Context) (ProbeResult, error)
	// Start applies spec and starts the run. An error means nothing started; it carries a
	// reason code (*reasons.Error) when the sandbox is unavailable or failed. A sandboxed
	// run never starts without a passing probe. Ending ctx stops the run as Run.Stop does.
	Start(ctx context.Context, spec Spec, stdio Stdio) (Run, error)
	// StopAll ends every run started through this launcher and returns when they are gone,
	// their dirs and cgroups removed (anet-sandboxd on SIGTERM or EOF of its socket: every
	// run ends with it).
	StopAll()
}

// Run is a started run.
type Run interface {
	// Wait blocks until every process of the run is gone, and returns how it ended. The
	// run's dirs and cgroups are removed right after, not before: nothing of the run can act
	// on them any more, and the launcher that started it removes them before it exits
	// (pkg/sandbox/launch: Settler, Launcher.Settle). It may be called more than once.
	Wait() Outcome
	// Stop ends the run now (TERM, grace, KILL); Wait reports it.
	Stop()
}

// Outcome is how a run ended.
type Outcome struct {
	// ExitCode is the agent's exit status; 128+n when a signal n ended it (shell convention,
	// as init reports it from inside the pid namespace). -1 when the agent never ran.
	ExitCode int `json:"exit_code"`
	// Signal is the signal that ended the agent, 0 when it exited.
	Signal int `json:"signal,omitempty"`
	// Limit is the limit that ended the run, or the cgroup limit it ran into; empty if none.
	Limit reasons.Code `json:"limit,omitempty"`
	// Cgroup says whether memory/task limits were in force.
	Cgroup CgroupLimits `json:"cgroup"`
	// Err is a launcher failure after the start (with a reason code when the sandbox
	// failed, or the launcher's helper went away).
	Err error `json:"-"`
	// Detail is a human-readable line (never a secret).
	Detail string `json:"detail,omitempty"`
}

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
	Limits   CgroupLimits   `json:"limits"`
	Warnings []reasons.Code `json:"warnings,omitempty"`
	// Shape is what a caller must know of the backend to prepare a run for it.
	Shape RunShape `json:"shape"`
	// ConfigHash identifies the sandbox configuration probed; At is when.
	ConfigHash string    `json:"config_hash"`
	At         time.Time `json:"at"`
	Cached     bool      `json:"cached,omitempty"`
}

// RunShape says how a backend's runs meet the host, for whoever prepares them (anetd opens
// the run's endpoint and writes the agent's settings before the run exists). The zero value
// is the namespaced backends' shape (bwrap, vm).
type RunShape struct {
	// Endpoint is how runs reach their endpoint.
	Endpoint EndpointKind `json:"endpoint,omitempty"`
	// HostPaths: runs see host paths, not the fixed /home/agent, /tmp and /work: their home
	// and tmp are <RunRoot>/<ID>/home and …/tmp, their work dir <WorkRoot>/<WorkSub> (see
	// HostRunDirs).
	HostPaths bool `json:"host_paths,omitempty"`
}

// EndpointKind says how a run reaches its endpoint.
type EndpointKind string

const (
	// EndpointSocket (also ""): the endpoint's unix socket is given to the run, whose own
	// loopback port (Spec.Port) relays to it (Spec.Endpoint).
	EndpointSocket EndpointKind = "socket"
	// EndpointLoopback: the run shares the host's loopback (Seatbelt has no network
	// namespace), so the endpoint listens on a host loopback TCP port (Spec.EndpointAddr)
	// and refuses every request and CONNECT that lacks the run's placeholder (M1, E1).
	EndpointLoopback EndpointKind = "loopback"
)

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

// CodeOf returns the reason code carried by err (a *reasons.Error, or an error that crossed
// a helper socket with its code), or "" when it has none.
func CodeOf(err error) reasons.Code {
	var re *reasons.Error
	if errors.As(err, &re) {
		return re.Code
	}
	var ce interface{ ReasonCode() reasons.Code }
	if errors.As(err, &ce) {
		return ce.ReasonCode()
	}
	return ""
}
