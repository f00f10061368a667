package egresswire

import (
	"encoding/json"
	"time"
)

// Methods anet-egress answers over its privsep socket, beside hello/status/shutdown.
const (
	// MethodOpen opens a run's endpoint (OpenRequest → OpenReply).
	MethodOpen = "endpoint.open"
	// MethodClose closes it and returns its usage (CloseRequest → CloseReply).
	MethodClose = "endpoint.close"
	// MethodUsage returns an open endpoint's usage so far (CloseRequest → CloseReply): the
	// model calls and what the upstream answered, for a run's progress.
	MethodUsage = "endpoint.usage"
	// MethodSelfTest runs `anet-egress self-test`: real endpoints (model proxy and CONNECT
	// egress) with a throw-away CA and a stand-in upstream, attacked as a hostile agent would
	// (E1–E9, H2–H5, R1). No body → the report (pkg/check's shape). One at a time; answered
	// within SelfTestTimeout.
	MethodSelfTest = "selftest"
)

// SelfTestTimeout bounds one MethodSelfTest, as `anet-egress self-test` bounds itself.
const SelfTestTimeout = 2 * time.Minute

// OpenRequest is the body of MethodOpen.
type OpenRequest struct {
	Policy Policy `json:"policy"`
}

// OpenReply tells anetd where the endpoint listens and the run's placeholder token, which
// goes into the agent's environment. The placeholder is worthless outside this endpoint and
// dies with the run.
type OpenReply struct {
	// Socket is the endpoint's unix socket (Listen socket); Addr its host loopback address
	// "127.0.0.1:P" (Listen loopback). Exactly one is set.
	Socket      string `json:"socket"`
	Addr        string `json:"addr,omitempty"`
	Placeholder string `json:"placeholder"`
	Model       string `json:"model"`
}

// CloseRequest is the body of MethodClose.
type CloseRequest struct {
	RunID string `json:"run_id"`
}

// CloseReply carries the run's usage (requests, bytes, tunnels, refusals by reason).
type CloseReply struct {
	Usage json.RawMessage `json:"usage"`
}
