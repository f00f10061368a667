package endpoint

import "anet.dev/anet/pkg/reasons"

// Reason codes owned by the endpoint.
const (
	NotFound          reasons.Code = "endpoint_not_found"
	TunnelUnavailable reasons.Code = "tunnel_unavailable"
	ConnectionLimit   reasons.Code = "connection_limit"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: NotFound, Kind: reasons.KindRule, Text: "the node's endpoint serves only the model API (/v1/...) and CONNECT to allowed hosts", Requirement: "E1"},
		reasons.Entry{Code: TunnelUnavailable, Kind: reasons.KindRule, Text: "CONNECT is not available for this run: no host is allowed", Requirement: "H4"},
		reasons.Entry{Code: ConnectionLimit, Kind: reasons.KindRule, Text: "at most 32 connections to the endpoint may be open at once; close one and retry", Requirement: "R1"},
	)
}
