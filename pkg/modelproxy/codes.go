package modelproxy

import (
	"fmt"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// Reason codes owned by the model proxy. Each rule refusal an agent can see is one sentence
// here, sent as "anet: <text>" in the upstream API's error shape (E9).
const (
	EndpointNotAllowed reasons.Code = "model_endpoint_not_allowed"
	PlaceholderMissing reasons.Code = "placeholder_missing"
	BodyEncoded        reasons.Code = "body_encoded"
	BodyNotJSON        reasons.Code = "body_not_json"
	BodyNotObject      reasons.Code = "body_not_object"
	BodyTooLarge       reasons.Code = "body_too_large"
	RequestLimit       reasons.Code = "model_request_limit"
	RequestDataLimit   reasons.Code = "model_request_data_limit"
	ServerToolRefused  reasons.Code = "server_tool_refused"
	BlockRefused       reasons.Code = "history_block_refused"
	MCPServersRefused  reasons.Code = "mcp_servers_refused"
	ContainerRefused   reasons.Code = "container_refused"
	MediaRefused       reasons.Code = "media_not_inline"
	StorageRefused     reasons.Code = "storage_refused"
	FieldNotAllowed    reasons.Code = "field_not_allowed"
	FieldInvalid       reasons.Code = "field_invalid"
	PrefillRefused     reasons.Code = "prefill_unsupported"
	HeaderInvalid      reasons.Code = "header_invalid"
	UpstreamFailed     reasons.Code = "upstream_unreachable"
	AnswerEncoded      reasons.Code = "upstream_answer_encoded"
	// ModelsFileInvalid: the operator's models override file cannot be read, parsed or
	// merged; LoadCatalog's message names the file and the field.
	ModelsFileInvalid reasons.Code = "models_file_invalid"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: EndpointNotAllowed, Kind: reasons.KindRule, Text: "this model-API endpoint is not available through the node; only messages, count_tokens, responses, responses/compact, chat/completions and models are (no files, batches, uploads, admin or WebSocket)", Requirement: "E4"},
		reasons.Entry{Code: PlaceholderMissing, Kind: reasons.KindRule, Text: "the request does not carry this run's API key; send the key the node put in your environment (x-api-key or Authorization: Bearer)", Requirement: "E1"},
		reasons.Entry{Code: BodyEncoded, Kind: reasons.KindRule, Text: "the request body must not be compressed: Content-Encoding is refused", Requirement: "E8"},
		reasons.Entry{Code: BodyNotJSON, Kind: reasons.KindRule, Text: "the request body must be one JSON value with nothing after it", Requirement: "E8"},
		reasons.Entry{Code: BodyNotObject, Kind: reasons.KindRule, Text: "the request body must be a JSON object", Requirement: "E8"},
		reasons.Entry{Code: ServerToolRefused, Kind: reasons.KindRule, Text: "tools run by the model service (web search, web fetch, code execution, MCP and the like) are not available; use only tools that run on your side", Requirement: "E4"},
		reasons.Entry{Code: BlockRefused, Kind: reasons.KindRule, Text: "the conversation holds a block of a server-run tool or of an unknown type; remove it", Requirement: "E4"},
		reasons.Entry{Code: MCPServersRefused, Kind: reasons.KindRule, Text: "mcp_servers (remote tool servers) are not available", Requirement: "E5"},
		reasons.Entry{Code: ContainerRefused, Kind: reasons.KindRule, Text: "the container field is not available", Requirement: "E5"},
		reasons.Entry{Code: MediaRefused, Kind: reasons.KindRule, Text: "media must be sent inline (base64 data or a data: URL), not by URL or file id", Requirement: "E5"},
		reasons.Entry{Code: StorageRefused, Kind: reasons.KindRule, Text: "requests that need server-side storage (previous_response_id, background, conversation, stored prompts, item references) are not available; send the whole conversation with store: false", Requirement: "E6"},
		reasons.Entry{Code: FieldNotAllowed, Kind: reasons.KindRule, Text: "a request field is not supported through the node; remove it", Requirement: "E2"},
		reasons.Entry{Code: FieldInvalid, Kind: reasons.KindRule, Text: "a request field has the wrong type or shape", Requirement: "E8"},
		reasons.Entry{Code: PrefillRefused, Kind: reasons.KindRule, Text: "the pinned model does not accept an assistant prefill (a last message from the assistant)", Requirement: "E2"},
		reasons.Entry{Code: HeaderInvalid, Kind: reasons.KindRule, Text: "a request header has a value the node does not forward", Requirement: "E7"},
		reasons.Entry{Code: UpstreamFailed, Kind: reasons.KindRule, Text: "the model service could not be reached; try again later", Requirement: "E11"},
		reasons.Entry{Code: AnswerEncoded, Kind: reasons.KindRule, Text: "the model service sent a compressed answer, which the node does not pass on unread; try again later", Requirement: "E1"},
	)
	reasons.Register(reasons.Entry{Code: ModelsFileInvalid, Kind: reasons.KindConfig, Text: "the models override file (models.yaml) cannot be used; fix the field named and run anet reload (a refused file leaves the models in use unchanged)", Requirement: "C4"})
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
