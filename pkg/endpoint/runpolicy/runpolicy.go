// Package runpolicy is one run's endpoint policy as plain, serialisable data: what anetd sends
// to anet-egress over the privsep socket. It links neither the keys reader nor the model
// proxy, so the daemon can build and validate a policy without them.
package runpolicy

import (
	"fmt"
	"regexp"

	"anet.dev/anet/pkg/modelproxy/upstream"
)

// R1's figures for the endpoint.
const (
	MaxModelRequests = 60
	MaxBodyBytes     = 8 << 20
	MaxTotalBytes    = 16 << 20
	MaxConnections   = 32
)

// ModelLimits bound a run's model traffic (R1). Zero fields take R1's figures.
type ModelLimits struct {
	Requests   int64 `json:"requests"`
	BodyBytes  int64 `json:"body_bytes"`
	TotalBytes int64 `json:"total_bytes"`
}

// Limits are the endpoint's share of R1. Zero fields take R1's figures; larger values are
// refused: a policy can lower a limit, never raise or remove it. Tunnel limits belong to the
// egress proxy.
type Limits struct {
	Model       ModelLimits `json:"model"`
	Connections int         `json:"connections"`
}

// Policy is one run's endpoint policy.
type Policy struct {
	RunID   string `json:"run_id"`
	Agent   string `json:"agent"`
	APIBase string `json:"api_base,omitempty"`
	// Model is the operator's configured model (id or alias); empty pins the cheapest.
	Model string `json:"model,omitempty"`
	// Allow is the egress allow-list, checked by the tunnel handler's own validation.
	Allow  []string `json:"allow,omitempty"`
	Limits Limits   `json:"limits"`
}

var runIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Validate checks p; errors name the field.
func (p Policy) Validate() error {
	if !runIDRE.MatchString(p.RunID) {
		return fmt.Errorf("policy run_id %q: want 1-128 letters, digits, '.', '_' or '-'", p.RunID)
	}
	if _, err := upstream.For(p.Agent, p.APIBase); err != nil {
		return fmt.Errorf("policy agent %q: %w", p.Agent, err)
	}
	l := p.Limits
	for _, c := range []struct {
		name     string
		got, max int64
	}{
		{"limits.model.requests", l.Model.Requests, MaxModelRequests},
		{"limits.model.body_bytes", l.Model.BodyBytes, MaxBodyBytes},
		{"limits.model.total_bytes", l.Model.TotalBytes, MaxTotalBytes},
		{"limits.connections", int64(l.Connections), MaxConnections},
	} {
		if c.got < 0 || c.got > c.max {
			return fmt.Errorf("policy %s = %d: must be between 0 (default) and %d (R1)", c.name, c.got, c.max)
		}
	}
	return nil
}

// ConnectionLimit is the connection limit in force.
func (l Limits) ConnectionLimit() int {
	if l.Connections == 0 {
		return MaxConnections
	}
	return l.Connections
}
