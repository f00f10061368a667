// Package endpoint serves one run's endpoint: a unix socket in a 0700 run directory with one
// HTTP/1.1 server on it. Model-API paths go to the model proxy (pkg/modelproxy), CONNECT goes
// to the egress tunnel handler, Claude Code's own calls (HEAD /, /api/*) are answered here and
// never forwarded, and anything else gets a 404 with an `anet:` reason (E1, R1).
package endpoint

import "anet.dev/anet/pkg/egresswire"

// Policy and Limits live in pkg/egresswire so that anetd can use them without linking this
// package (which links the keys reader).
type (
	Policy = egresswire.Policy
	Limits = egresswire.Limits
)
