package sandbox

import (
	"context"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// Methods anet-sandboxd answers over its privsep socket, beside hello/status/shutdown. They
// are the Launcher seam on the wire (pkg/sandbox/remote has both ends).
const (
	// MethodProbe returns a ProbeResult (cached five minutes).
	MethodProbe = "probe"
	// MethodRun starts a RunRequest with two descriptors (the agent's stdout and stderr) and
	// answers once the run has started (Launcher.Start); an error means nothing started.
	MethodRun = "run"
	// MethodRunWait answers the WireOutcome of the run named by a RunID when every process
	// of it is gone (Run.Wait).
	MethodRunWait = "run.wait"
	// MethodRunStop ends the run named by a RunID (Run.Stop).
	MethodRunStop = "run.stop"
	// MethodSelfTest runs `anet-sandboxd self-test` with the Launcher the helper serves with
	// (its tier: bwrap, vm or seatbelt): the probe, then the attack battery, in a real sandbox
	// (S7, S8). SelfTestRequest → the self-test's report (pkg/check's shape, with the probe's
	// limits beside it). One at a time; answered within SelfTestTimeout.
	MethodSelfTest = "selftest"
)

// SelfTestTimeout bounds one MethodSelfTest: a vm tier boots a guest for the probe and
// another for the battery; bwrap needs seconds.
const SelfTestTimeout = 4 * time.Minute

// SelfTestRequest is the body of MethodSelfTest: the memory, task and disk limits of the
// configuration in force, so that the battery runs under the limits a turn gets (its wall
// clock is the self-test's own).
type SelfTestRequest struct {
	Limits Limits `json:"limits"`
}

// RunRequest is the body of MethodRun.
type RunRequest struct {
	Spec Spec `json:"spec"`
}

// RunID is the body of MethodRunWait and MethodRunStop.
type RunID struct {
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

// Decode is the Outcome again, its error with the text and reason code it was sent with.
func (w WireOutcome) Decode() Outcome {
	o := w.Outcome
	if w.Error != "" || w.Code != "" {
		o.Err = &codedError{code: w.Code, msg: w.Error}
	}
	return o
}

// codedError is an error that crossed a process boundary: its text as sent, and its code.
type codedError struct {
	code reasons.Code
	msg  string
}

func (e *codedError) Error() string            { return e.msg }
func (e *codedError) ReasonCode() reasons.Code { return e.code }

// MaxOutput bounds what is kept of a run's stdout and of its stderr: an agent's answer and
// its error lines are far smaller, and anetd must not hold what a run chooses to write.
const MaxOutput = 1 << 20

// RunResult is a finished run as anetd sees it: the outcome, and what the agent wrote to
// stdout and stderr (each cut at MaxOutput).
type RunResult struct {
	Outcome        WireOutcome
	Stdout, Stderr []byte
}

// RunToEnd starts spec through l and waits for the run to end. An error, with the launcher's
// reason code, means the run gave no outcome: it did not start, or the helper that ran it
// went away first (helper_down; the helper ends its runs as it goes). Otherwise the run's
// outcome and output come back, whatever the agent did.
func RunToEnd(ctx context.Context, l Launcher, spec Spec) (RunResult, error) {
	stdout, stderr := NewHead(MaxOutput), NewHead(MaxOutput)
	r, err := l.Start(ctx, spec, Stdio{Stdout: stdout, Stderr: stderr})
	if err != nil {
		return RunResult{}, err
	}
	o := r.Wait()
	if CodeOf(o.Err) == reasons.HelperDown {
		return RunResult{}, o.Err
	}
	return RunResult{Outcome: NewWireOutcome(o), Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
}
