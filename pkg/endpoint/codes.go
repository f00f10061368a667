package endpoint

import (
	"fmt"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// Reason codes owned by the endpoint.
const (
	NotFound          reasons.Code = "endpoint_not_found"
	TunnelUnavailable reasons.Code = "tunnel_unavailable"
	ConnectionLimit   reasons.Code = "connection_limit"
	TokenMissing      reasons.Code = "endpoint_token_missing"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: NotFound, Kind: reasons.KindRule, Text: "the node's endpoint serves only the model API (/v1/...) and CONNECT to allowed hosts", Requirement: "E1"},
		reasons.Entry{Code: TunnelUnavailable, Kind: reasons.KindRule, Text: "CONNECT is not available for this run: no host is allowed", Requirement: "H4"},
		connectionLimitEntry(limits.EndpointConnections),
		reasons.Entry{Code: TokenMissing, Kind: reasons.KindRule, Text: "this endpoint answers only requests that carry this run's token: the API key the node put in your environment (x-api-key or Authorization: Bearer) on model requests, and the proxy URL's credentials (Proxy-Authorization) on CONNECT", Requirement: "M1"},
	)
}

// connectionLimitEntry is R1's connection sentence, built from the figure it states.
func connectionLimitEntry(max int) reasons.Entry {
	return reasons.Entry{Code: ConnectionLimit, Kind: reasons.KindRule, Text: fmt.Sprintf("at most %d connections to the endpoint may be open at once; close one and retry", max), Requirement: "R1"}
}
