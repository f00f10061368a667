package sandbox

import (
	"context"
	"errors"
	"io"

	"anet.dev/anet/pkg/reasons"
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
