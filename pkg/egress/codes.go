package egress

import (
	"fmt"
	"net/http"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// Reason codes owned by the egress proxy. Refusals before the tunnel opens are sent as an HTTP
// answer with the code in X-Anet-Refusal and the body "anet: <text> (rule R, code C)" (E9);
// refusals after the 200 can only close the tunnel, so they show up in the log, in
// Usage.Refusals and in the tunnel's receipt.
const (
	BadConnect     reasons.Code = "egress_bad_connect"
	BadHost        reasons.Code = "egress_bad_host"
	HostNotAllowed reasons.Code = "egress_host_not_allowed"
	ResolveFailed  reasons.Code = "egress_resolve_failed"
	AddressRefused reasons.Code = "egress_address_refused"
	DialFailed     reasons.Code = "egress_dial_failed"
	TunnelLimit    reasons.Code = "egress_tunnel_limit"
	BytesLimit     reasons.Code = "egress_bytes_limit"
	RunOver        reasons.Code = "egress_run_over"
	NotTLS         reasons.Code = "egress_not_tls"
	BadHello       reasons.Code = "egress_bad_hello"
	HelloTooLarge  reasons.Code = "egress_hello_too_large"
	HelloTimeout   reasons.Code = "egress_hello_timeout"
	SNIMismatch    reasons.Code = "egress_sni_mismatch"
	ECHRefused     reasons.Code = "egress_ech_refused"
	// AllowListRefuse is config's code: one rule, one code (config.ValidateEgressAllow).
	AllowListRefuse = config.EgressAllowRefused
)

func init() {
	reasons.Register(
		reasons.Entry{Code: BadHost, Kind: reasons.KindRule, Text: "the CONNECT host must be a lower-case DNS name with at least two labels (punycode for international names); IP addresses and local-network names are refused", Requirement: "H4"},
		reasons.Entry{Code: HostNotAllowed, Kind: reasons.KindRule, Text: "this host is not in the operator's egress allow-list; only the listed host names are reachable, each compared exactly (no subdomains)", Requirement: "H4"},
		reasons.Entry{Code: ResolveFailed, Kind: reasons.KindRule, Text: "the node could not resolve this host name; try again later", Requirement: "H5"},
		reasons.Entry{Code: AddressRefused, Kind: reasons.KindRule, Text: "this host name resolves to a private, reserved or local address, so the node refuses to connect to it", Requirement: "H5"},
		reasons.Entry{Code: RunOver, Kind: reasons.KindRule, Text: "this run has ended; its tunnels are closed", Requirement: "R1"},
		reasons.Entry{Code: NotTLS, Kind: reasons.KindRule, Text: "the first bytes through a tunnel must be a TLS ClientHello; plain-text protocols are not tunnelled", Requirement: "H6"},
		reasons.Entry{Code: BadHello, Kind: reasons.KindRule, Text: "the TLS ClientHello sent through the tunnel is malformed", Requirement: "H6"},
		reasons.Entry{Code: HelloTimeout, Kind: reasons.KindRule, Text: "the TLS ClientHello did not arrive through the tunnel in time", Requirement: "H6"},
		reasons.Entry{Code: SNIMismatch, Kind: reasons.KindRule, Text: "the TLS ClientHello must name exactly one server (SNI) and it must equal the CONNECT host", Requirement: "H6"},
		reasons.Entry{Code: ECHRefused, Kind: reasons.KindRule, Text: "encrypted ClientHello (ECH) is refused because the node must see the server name; turn ECH off in the client", Requirement: "H6"},
	)
	reasons.Register(figureEntries(DefaultLimits())...)
}

// figureEntries are the sentences that state a figure, built from the figures themselves: the
// run's tunnel limits l (R1), the port, header and ClientHello bounds. (The allow-list's
// sentence, with its cap, is pkg/config's: the one allow-list rule lives there.)
func figureEntries(l Limits) []reasons.Entry {
	return []reasons.Entry{
		{Code: BadConnect, Kind: reasons.KindRule, Text: fmt.Sprintf("a tunnel must be requested as `CONNECT host:%d HTTP/1.1` (or HTTP/1.0; authority form, port %d, no user info, scheme, path, body, Content-Length or Transfer-Encoding, headers under %s)", tunnelPort, tunnelPort, limits.Bytes(maxConnectHeaderBytes)), Requirement: "H4"},
		{Code: DialFailed, Kind: reasons.KindRule, Text: fmt.Sprintf("the node could not connect to this host on port %d; try again later", tunnelPort), Requirement: "H5"},
		{Code: TunnelLimit, Kind: reasons.KindRule, Text: fmt.Sprintf("this run has reached its tunnel limit (%d open at once, %d in all); close a tunnel or answer with what you have", l.OpenTunnels, l.TotalTunnels), Requirement: "R1"},
		{Code: BytesLimit, Kind: reasons.KindRule, Text: fmt.Sprintf("this run has used up its tunnel data (%s sent, %s received); answer with what you have", limits.Bytes(l.SentBytes), limits.Bytes(l.ReceivedBytes)), Requirement: "R1"},
		{Code: HelloTooLarge, Kind: reasons.KindRule, Text: "the TLS ClientHello sent through the tunnel is larger than " + limits.Bytes(MaxHelloBytes), Requirement: "H6"},
	}
}

// statusFor is the HTTP status sent with a refusal answered before the tunnel opens.
func statusFor(c reasons.Code) int {
	switch c {
	case BadConnect, BadHost:
		return http.StatusBadRequest
	case TunnelLimit, BytesLimit:
		return http.StatusTooManyRequests
	case ResolveFailed, DialFailed:
		return http.StatusBadGateway
	case RunOver:
		return http.StatusServiceUnavailable
	default:
		return http.StatusForbidden
	}
}
