// Package rules is the model proxy's policy: the pure rule engine of one run (E2–E8), request
// bytes and headers in, a Decision out, and the models catalog it pins requests to (the
// embedded models.yaml and the operator's override, read once). The engine holds no key and
// does no I/O, so it is table-tested and fuzzed apart from the HTTP layer (pkg/modelproxy),
// which is handed an Engine and applies its decisions.
package rules

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/modelproxy/jsontree"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/reasons"
)

// Engine is the pure rule engine of one run: request bytes and headers in, a Decision out.
// It holds no key and does no I/O, so it is table-tested apart from the HTTP layer.
type Engine struct {
	up     upstream.Upstream
	pinned Pinned
	cap    int64
	// capNum and pinnedQ are cap as a JSON number and the pinned id quoted (%q), made once:
	// nearly every request gets both written into its body or its notes.
	capNum  json.Number
	pinnedQ string
}

// NewEngine builds the engine for up, pinning every request to configured (an id or alias,
// or empty for the provider's cheapest model, E2).
func NewEngine(up upstream.Upstream, configured string, cat *Catalog) (*Engine, error) {
	p, err := cat.Resolve(up.CatalogProvider, configured)
	if err != nil {
		return nil, fmt.Errorf("model engine for %s: %w", up.Agent, err)
	}
	c := int64(limits.OutputTokens)
	if p.Known && p.Model.MaxOutputTokens > 0 && int64(p.Model.MaxOutputTokens) < c {
		c = int64(p.Model.MaxOutputTokens)
	}
	return &Engine{up: up, pinned: p, cap: c, capNum: json.Number(strconv.FormatInt(c, 10)), pinnedQ: strconv.Quote(p.ID)}, nil
}

// Model returns the pinned model id.
func (e *Engine) Model() string { return e.pinned.ID }

// FamilyFor guesses the wire shape of a request for its error answer, before it is routed.
func (e *Engine) FamilyFor(path string, h http.Header) upstream.Family {
	if len(e.up.Families) == 1 {
		return e.up.Families[0]
	}
	if strings.HasPrefix(path, "/v1/messages") || h.Get("anthropic-version") != "" {
		return upstream.FamilyAnthropic
	}
	return upstream.FamilyOpenAI
}

// Route maps method and path to an allowed API: an allow-list of method+path, never of
// host (a host allow-list once let a file-upload API out; docs/threat-model.md). A path with escapes,
// dot segments or doubled slashes never matches.
func (e *Engine) Route(method, path string, h http.Header) (API, *Refusal) {
	// The refusal is built only when it is the answer: this runs for every request.
	notAllowed := func(why string) *Refusal {
		return &Refusal{Code: EndpointNotAllowed, Status: http.StatusNotFound, Detail: method + " " + reasons.Clip(path, 80) + why}
	}
	if h.Get("Upgrade") != "" {
		// Codex falls back to HTTP after a 404 to its WebSocket attempt.
		return "", notAllowed(" (upgrade)")
	}
	var api API
	switch {
	case method == http.MethodPost && path == "/v1/messages":
		api = AnthropicMessages
	case method == http.MethodPost && path == "/v1/messages/count_tokens":
		api = AnthropicCountTokens
	case method == http.MethodPost && path == "/v1/responses":
		api = OpenAIResponses
	case method == http.MethodPost && path == "/v1/responses/compact":
		api = OpenAICompact
	case method == http.MethodPost && path == "/v1/chat/completions":
		api = OpenAIChat
	case method == http.MethodGet && path == "/v1/models":
		api = OpenAIModels
		if e.FamilyFor(path, h) == upstream.FamilyAnthropic {
			api = AnthropicModels
		}
	default:
		return "", notAllowed("")
	}
	if !e.up.Serves(api.Family()) {
		return "", notAllowed("")
	}
	return api, nil
}

// UpstreamPath is the path sent upstream for api and the query kept (only Claude Code's
// beta=true on messages; any other query is dropped).
func (e *Engine) UpstreamPath(api API, rawQuery string) (string, string) {
	var p string
	switch api {
	case AnthropicMessages:
		p = "/messages"
	case AnthropicCountTokens:
		p = "/messages/count_tokens"
	case OpenAIResponses:
		p = "/responses"
	case OpenAICompact:
		p = "/responses/compact"
	case OpenAIChat:
		p = "/chat/completions"
	}
	q := ""
	if api.Family() == upstream.FamilyAnthropic && rawQuery == "beta=true" {
		q = rawQuery
	}
	return e.up.BasePath + p, q
}

// Apply runs every body and header rule of api over a request (E2–E8).
func (e *Engine) Apply(api API, h http.Header, body []byte) Decision {
	d := Decision{API: api}
	if r := CheckEncoding(h); r != nil {
		d.Refusal = r
		return d
	}
	o, r := decodeBody(body)
	if r != nil {
		d.Refusal = r
		return d
	}
	var n notes
	var hdr http.Header
	switch api.Family() {
	case upstream.FamilyAnthropic:
		var betas map[string]bool
		hdr, betas, r = e.anthropicHeaders(h, &n)
		if r == nil {
			r = e.anthropicBody(api, o, betas, &n)
		}
	default:
		hdr = baseHeaders(h)
		r = e.openAIBody(api, o, &n)
	}
	if r == nil {
		d.UsageAdded, r = streamUsage(api, o, &n)
	}
	if r != nil {
		d.Refusal = r
		return d
	}
	d.MaxOutput = e.outputBound(api, o)
	out, err := jsontree.Encode(o, len(body))
	if err != nil {
		d.Refusal = Refuse(FieldInvalid, "body cannot be re-encoded")
		return d
	}
	d.Header, d.Body, d.Notes = hdr, out, n
	return d
}

// ModelsList answers GET /v1/models locally with the pinned model only: the agent needs no
// other, and the upstream is not called.
func (e *Engine) ModelsList(api API) []byte {
	id := e.pinned.ID
	if api == AnthropicModels {
		return fmt.Appendf(nil, `{"data":[{"type":"model","id":%q,"display_name":%q,"created_at":"2026-01-01T00:00:00Z"}],"has_more":false,"first_id":%q,"last_id":%q}`, id, id, id, id)
	}
	// "models" is empty on purpose: Codex reads that key (its own catalog shape) and falls
	// back to its built-in model info; OpenAI SDKs read "data".
	return fmt.Appendf(nil, `{"object":"list","data":[{"id":%q,"object":"model","created":0,"owned_by":"anet"}],"models":[]}`, id)
}

// topLevel applies what every API's body shares at its top level: remote tool servers and
// containers refused (E5), only the API's known fields (an unknown one could be a new
// server-side feature), and the model pinned (E2).
func (e *Engine) topLevel(o object, allowed map[string]bool, n *notes) *Refusal {
	if _, ok := o["mcp_servers"]; ok {
		return Refuse(MCPServersRefused, "mcp_servers")
	}
	if _, ok := o["container"]; ok {
		return Refuse(ContainerRefused, "container")
	}
	if k, ok := firstNotAllowed(o, allowed); ok {
		return Refuse(FieldNotAllowed, "%s", reasons.Clip(k, 60))
	}
	if m, _ := o["model"].(string); m != e.pinned.ID {
		// The one note nearly every request gets: built without fmt, the pinned side quoted
		// once per engine.
		*n = append(*n, "model "+quote(reasons.Clip(m, 60))+"→"+e.pinnedQ)
	}
	o["model"] = e.pinned.ID
	return nil
}

// firstNotAllowed returns the smallest key of o not on allowed, so that a refusal names the
// same field whatever the map's order; the keys are sorted only when one is refused.
func firstNotAllowed(o object, allowed map[string]bool) (string, bool) {
	for k := range o {
		if !allowed[k] {
			return slices.Sorted(func(yield func(string) bool) {
				for k := range o {
					if !allowed[k] && !yield(k) {
						return
					}
				}
			})[0], true
		}
	}
	return "", false
}
