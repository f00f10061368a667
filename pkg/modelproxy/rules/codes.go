package rules

import (
	"anet.dev/anet/pkg/reasons"
)

// Reason codes of the model rules. Each rule refusal an agent can see is one sentence here or
// in pkg/modelproxy (the proxy's own: the token, the limits, the upstream), sent as
// "anet: <text>" in the upstream API's error shape (E9).
const (
	EndpointNotAllowed reasons.Code = "model_endpoint_not_allowed"
	BodyEncoded        reasons.Code = "body_encoded"
	BodyNotJSON        reasons.Code = "body_not_json"
	BodyNotObject      reasons.Code = "body_not_object"
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
	// ModelsFileInvalid: the operator's models override file cannot be read, parsed or
	// merged; LoadCatalog's message names the file and the field.
	ModelsFileInvalid reasons.Code = "models_file_invalid"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: EndpointNotAllowed, Kind: reasons.KindRule, Text: "this model-API endpoint is not available through the node; only messages, count_tokens, responses, responses/compact, chat/completions and models are (no files, batches, uploads, admin or WebSocket)", Requirement: "E4"},
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
	)
	reasons.Register(reasons.Entry{Code: ModelsFileInvalid, Kind: reasons.KindConfig, Text: "the models override file (models.yaml) cannot be used; fix the field named and run anet reload (a refused file leaves the models in use unchanged)", Requirement: "C4"})
}
