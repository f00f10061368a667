// Package egresswire is the whole wire between anetd and anet-egress, as plain, serialisable
// data both sides share: the methods anet-egress answers over its privsep socket beside
// hello/status/shutdown, one run's endpoint policy (endpoint.open, endpoint.close,
// endpoint.usage), and the openai back-end's one completion (complete, P3). It imports only
// leaf packages (the figures, money, the upstream table), never the keys reader, the model
// proxy or the endpoint, so the daemon can build and validate a request without linking what
// serves it.
package egresswire
