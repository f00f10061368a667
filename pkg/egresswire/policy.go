package egresswire

import (
	"fmt"
	"regexp"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/money"
)

// Limits are the endpoint's share of R1. Zero fields take R1's figures; larger values are
// refused: a policy can lower a limit, never raise or remove it. Tunnel limits belong to the
// egress proxy.
type Limits struct {
	Model       limits.Model `json:"model"`
	Connections int          `json:"connections"`
}

// Policy is one run's endpoint policy: what anetd sends to anet-egress to open the run's
// endpoint (OpenRequest).
type Policy struct {
	RunID   string `json:"run_id"`
	Agent   string `json:"agent"`
	APIBase string `json:"api_base,omitempty"`
	// Model is the operator's configured model (id or alias); empty pins the cheapest.
	Model string `json:"model,omitempty"`
	// Allow is the egress allow-list, checked by the tunnel handler's own validation.
	Allow  []string `json:"allow,omitempty"`
	Limits Limits   `json:"limits"`
	// Listen is where the endpoint listens: ListenSocket ("", a unix socket in a 0700 run
	// dir, bound into the run) or ListenLoopback (a host loopback TCP port, for a sandbox
	// without a network namespace: then every request and CONNECT must carry the run's
	// placeholder, M1).
	Listen string `json:"listen,omitempty"`
	// Allowance is what the run may spend on the model in micro-units (K2): what is left of
	// the day's and the peer's caps when the run starts. nil: no allowance (trusted runs are
	// metered, never stopped for spend).
	Allowance *money.Micros `json:"allowance_micros,omitempty"`
}

// Where an endpoint listens (Policy.Listen).
const (
	ListenSocket   = "socket"
	ListenLoopback = "loopback"
)

// runIDRE is the one shape of a run id, in a policy and in a completion.
var runIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Validate checks p; errors name the field.
func (p Policy) Validate() error {
	if !runIDRE.MatchString(p.RunID) {
		return fmt.Errorf("policy run_id %q: want 1-128 letters, digits, '.', '_' or '-'", p.RunID)
	}
	if _, err := upstream.For(p.Agent, p.APIBase); err != nil {
		return fmt.Errorf("policy agent %q: %w", p.Agent, err)
	}
	switch p.Listen {
	case "", ListenSocket, ListenLoopback:
	default:
		return fmt.Errorf("policy listen %q: want %q or %q", p.Listen, ListenSocket, ListenLoopback)
	}
	if p.Allowance != nil && *p.Allowance < 0 {
		return fmt.Errorf("policy allowance_micros = %d: must not be negative", *p.Allowance)
	}
	if err := p.Limits.Model.Check("policy limits.model."); err != nil {
		return err
	}
	if c := p.Limits.Connections; c < 0 || c > limits.EndpointConnections {
		return fmt.Errorf("policy limits.connections = %d: must be between 0 (default) and %d (R1)", c, limits.EndpointConnections)
	}
	return nil
}

// ConnectionLimit is the connection limit in force.
func (l Limits) ConnectionLimit() int {
	if l.Connections == 0 {
		return limits.EndpointConnections
	}
	return l.Connections
}
