package sandbox

import "anet.dev/anet/pkg/reasons"

// Methods anet-sandboxd answers over its privsep socket, beside hello/status/shutdown.
const (
	// MethodProbe returns a ProbeResult (cached five minutes).
	MethodProbe = "probe"
	// MethodRun starts a RunRequest with two descriptors (the agent's stdout and stderr)
	// and answers a WireOutcome when every process of the run is gone.
	MethodRun = "run"
	// MethodRunStop ends the run named by a StopRequest.
	MethodRunStop = "run.stop"
)

// RunRequest is the body of MethodRun.
type RunRequest struct {
	Spec Spec `json:"spec"`
}

// StopRequest is the body of MethodRunStop.
type StopRequest struct {
	ID string `json:"id"`
}

// WireOutcome is an Outcome with its error as text and reason code, as sent over the helper
// socket and written by `exec --outcome`.
type WireOutcome struct {
	Outcome
	Code  reasons.Code `json:"code,omitempty"`
	Error string       `json:"error,omitempty"`
}

// NewWireOutcome converts o.
func NewWireOutcome(o Outcome) WireOutcome {
	w := WireOutcome{Outcome: o}
	if o.Err != nil {
		w.Error, w.Code = o.Err.Error(), CodeOf(o.Err)
	}
	return w
}

// RunResult is a finished run as anetd sees it: the outcome, and what the agent wrote to
// stdout and stderr (read back from the descriptors passed with MethodRun, capped).
type RunResult struct {
	Outcome        WireOutcome
	Stdout, Stderr []byte
}
