package rules

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"anet.dev/anet/pkg/modelproxy/jsontree"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/reasons"
)

// API identifies one allowed model-API endpoint.
type API string

const (
	AnthropicMessages    API = "anthropic.messages"
	AnthropicCountTokens API = "anthropic.count_tokens"
	AnthropicModels      API = "anthropic.models"
	OpenAIResponses      API = "openai.responses"
	OpenAICompact        API = "openai.responses.compact"
	OpenAIChat           API = "openai.chat.completions"
	OpenAIModels         API = "openai.models"
)

// Family returns the wire shape of a.
func (a API) Family() upstream.Family {
	switch a {
	case AnthropicMessages, AnthropicCountTokens, AnthropicModels:
		return upstream.FamilyAnthropic
	}
	return upstream.FamilyOpenAI
}

// Local reports whether a is answered by the node without calling the upstream.
func (a API) Local() bool { return a == AnthropicModels || a == OpenAIModels }

// Refusal is a rule violation: the request is answered by the node and never forwarded.
type Refusal struct {
	Code   reasons.Code
	Status int
	// Detail names the offending field or value; it never holds a secret.
	Detail string
}

// Message is the sentence the agent reads (E9).
func (r *Refusal) Message() string {
	if r.Detail == "" {
		return "anet: " + reasons.Text(r.Code)
	}
	return "anet: " + reasons.Text(r.Code) + " (" + r.Detail + ")"
}

func (r *Refusal) Error() string { return string(r.Code) + ": " + r.Message() }

// Refuse is a bad-request (400) refusal with code, its detail written by format and clipped
// to 160 bytes; the proxy and the meter refuse through it too.
func Refuse(code reasons.Code, format string, args ...any) *Refusal {
	d := fmt.Sprintf(format, args...)
	if len(d) > 160 {
		d = d[:160] + "…"
	}
	return &Refusal{Code: code, Status: http.StatusBadRequest, Detail: d}
}

// Decision is the outcome of the rule engine for one request: either a Refusal, or the
// rewritten body and the headers to send upstream (without the key, which the HTTP layer
// adds last).
type Decision struct {
	API     API
	Refusal *Refusal
	Header  http.Header
	Body    []byte
	// Notes lists the normalisations applied, for the per-request log line.
	Notes []string
	// MaxOutput bounds the output tokens of the rewritten request (E3): with the body's size
	// it gives the request's worst-case cost (K2). 0 for requests that generate nothing.
	MaxOutput int64
	// UsageAdded: the node asked a streamed chat completion for its usage chunk, which the
	// client did not ask for and must not receive (K1).
	UsageAdded bool
}

// ErrorBody renders r in the upstream API's error shape.
func ErrorBody(f upstream.Family, r *Refusal) []byte {
	var v any
	if f == upstream.FamilyAnthropic {
		v = map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(r.Status), "message": r.Message()}}
	} else {
		v = map[string]any{"error": map[string]any{"message": r.Message(), "type": "invalid_request_error", "code": string(r.Code), "param": nil}}
	}
	b, _ := json.Marshal(v)
	return b
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusBadGateway:
		return "api_error"
	}
	return "invalid_request_error"
}

// object is the codec's tree object, named short: the rules handle nothing else.
type object = jsontree.Object

// decodeBody parses body as exactly one JSON object (E8), or names what is wrong with it.
func decodeBody(body []byte) (object, *Refusal) {
	o, err := jsontree.Decode(body)
	if err != nil {
		code := BodyNotJSON
		if err.NotObject {
			code = BodyNotObject
		}
		return nil, Refuse(code, "%s", err.Detail)
	}
	return o, nil
}

// notes collects normalisations.
type notes []string

func (n *notes) add(format string, args ...any) { *n = append(*n, fmt.Sprintf(format, args...)) }

// capTokens caps field key of o at the engine's cap and sets it when missing (E3). A null is
// missing: the upstreams read it as "not set" and use the model's own maximum, so it is never
// forwarded; it is replaced by the cap, or dropped where a missing field stays missing. Any
// other non-integer or non-positive value (a string, even "" or "100", a bool, a fraction, an
// object) is refused naming the field, as it always was: the upstream would refuse it too, and
// guessing what it meant could bill more than the reservation counted (K2).
func (e *Engine) capTokens(o object, key, path string, setMissing bool, n *notes) *Refusal {
	v, present := o[key]
	if present && v == nil {
		delete(o, key)
		if !setMissing {
			*n = append(*n, path+" null dropped")
			return nil
		}
	}
	if v == nil {
		if setMissing {
			o[key] = e.capNum
			*n = append(*n, path+" set to "+string(e.capNum))
		}
		return nil
	}
	i, ok := jsontree.Int(v)
	if !ok || i < 1 {
		return Refuse(FieldInvalid, "%s must be a positive integer", path)
	}
	if i > e.cap {
		o[key] = e.capNum
		*n = append(*n, path+" capped "+string(v.(json.Number))+"→"+string(e.capNum))
	}
	return nil
}

// quote is strconv.Quote, without its rune-by-rune pass for the common string that is
// printable ASCII without a quote or a backslash (which it returns as it is, in quotes).
func quote(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return strconv.Quote(s)
		}
	}
	return `"` + s + `"`
}

// indexPath is path[i], the name a refusal or a note gives an array's item. Built without
// fmt, and only when it is needed: a long conversation has thousands of blocks.
func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// contentPath is path[i].content, the content of a message, in one allocation.
func contentPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "].content" }

// contentParts checks a content value of any API: absent, a string, or an array of objects
// whose type is on allowed (anything else is a refused block, E4), each then checked by rule,
// which is given path and the item's index (the item's path is indexPath(path, i), made only
// by a rule that names it).
func contentParts(v any, path string, allowed map[string]bool, rule func(typ string, p object, path string, i int) *Refusal) *Refusal {
	switch c := v.(type) {
	case nil, string:
		return nil
	case []any:
		for j, p := range c {
			po, ok := p.(object)
			if !ok {
				return Refuse(FieldInvalid, "%s must be an object", indexPath(path, j))
			}
			typ, _ := po["type"].(string)
			if !allowed[typ] {
				return Refuse(BlockRefused, "%s.type %q", indexPath(path, j), reasons.Clip(typ, 60))
			}
			if r := rule(typ, po, path, j); r != nil {
				return r
			}
		}
		return nil
	}
	return Refuse(FieldInvalid, "%s must be a string or an array", path)
}

// plainContent reports whether a content value is absent or a string: nothing in it to check,
// and no path to make for it.
func plainContent(v any) bool {
	switch v.(type) {
	case nil, string:
		return true
	}
	return false
}

func isTruthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	}
	return true
}
