package modelproxy

import (
	"fmt"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// Reason codes of the proxy itself: the run's token, its limits (R1) and the upstream. The
// rules' own codes are in pkg/modelproxy/rules; each is sent as "anet: <text>" in the
// upstream API's error shape (E9).
const (
	PlaceholderMissing reasons.Code = "placeholder_missing"
	BodyTooLarge       reasons.Code = "body_too_large"
	RequestLimit       reasons.Code = "model_request_limit"
	RequestDataLimit   reasons.Code = "model_request_data_limit"
	UpstreamFailed     reasons.Code = "upstream_unreachable"
	AnswerEncoded      reasons.Code = "upstream_answer_encoded"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: PlaceholderMissing, Kind: reasons.KindRule, Text: "the request does not carry this run's API key; send the key the node put in your environment (x-api-key or Authorization: Bearer)", Requirement: "E1"},
		reasons.Entry{Code: UpstreamFailed, Kind: reasons.KindRule, Text: "the model service could not be reached; try again later", Requirement: "E11"},
		reasons.Entry{Code: AnswerEncoded, Kind: reasons.KindRule, Text: "the model service sent a compressed answer, which the node does not pass on unread; try again later", Requirement: "E1"},
	)
	reasons.Register(limitEntries(limits.R1Model())...)
}

// limitEntries are the R1 sentences, built from m so that a sentence never states another
// figure than the one the proxy enforces.
func limitEntries(m limits.Model) []reasons.Entry {
	return []reasons.Entry{
		{Code: BodyTooLarge, Kind: reasons.KindRule, Text: "a request body may be at most " + limits.Bytes(m.BodyBytes), Requirement: "R1"},
		{Code: RequestLimit, Kind: reasons.KindRule, Text: fmt.Sprintf("this run has used all of its %d model requests; answer with what you have", m.Requests), Requirement: "R1"},
		{Code: RequestDataLimit, Kind: reasons.KindRule, Text: "this run has sent its " + limits.Bytes(m.TotalBytes) + " of model request data; answer with what you have", Requirement: "R1"},
	}
}
