package rules

import (
	"anet.dev/anet/pkg/modelproxy/jsontree"
	"anet.dev/anet/pkg/money"
)

// Prices returns the pinned model's prices; nil when the models file gives none (K1).
func (e *Engine) Prices() *money.Prices {
	if !e.pinned.Known {
		return nil
	}
	return e.pinned.Model.Prices
}

// outputTokenFields are every field that bounds a request's output (E3).
var outputTokenFields = []string{"max_tokens", "max_output_tokens", "max_completion_tokens"}

// outputBound is the most output tokens the rewritten request o can generate, for its
// worst-case cost (K2): the largest output field of the request and its fallbacks[] (only one
// of them answers), or the cap where none is set, plus the max_tokens of every tool that names
// its own model (each is a second model writing beside the answer, billed with it; the rules
// have set and capped each, E3). count_tokens generates nothing and costs nothing.
func (e *Engine) outputBound(api API, o object) int64 {
	if api == AnthropicCountTokens {
		return 0
	}
	var bound int64
	found := false
	take := func(obj object) {
		for _, k := range outputTokenFields {
			if n, ok := jsontree.Int(obj[k]); ok && n > 0 {
				found = true
				bound = max(bound, n)
			}
		}
	}
	take(o)
	if fb, ok := o["fallbacks"].([]any); ok {
		for _, f := range fb {
			if fo, ok := f.(object); ok {
				take(fo)
			}
		}
	}
	if !found {
		bound = e.cap
	}
	// Only Messages pins and caps a tool's model (anthropicTools); elsewhere a tool's fields are
	// not read as lengths, so an uncapped value there cannot swell the bound.
	if tools, ok := o["tools"].([]any); ok && api == AnthropicMessages {
		for _, t := range tools {
			if to, ok := t.(object); ok && to["model"] != nil {
				// Set by the rules for such a tool; the cap stands in should one be missing.
				n, ok := jsontree.Int(to["max_tokens"])
				if !ok || n < 1 {
					n = e.cap
				}
				bound += n
			}
		}
	}
	return bound
}

// streamUsage makes a streamed chat completion end with its usage chunk, the only way that
// API reports a stream's tokens (K1): stream_options.include_usage is set. added tells the
// proxy that the client did not ask for the chunk, so it is taken out of the stream again: a
// client that did not ask for it may not expect a chunk without choices.
func streamUsage(api API, o object, n *notes) (added bool, r *Refusal) {
	if api != OpenAIChat || o["stream"] != true {
		return false, nil
	}
	so, ok := o["stream_options"].(object)
	switch {
	case o["stream_options"] == nil:
		so = object{}
		o["stream_options"] = so
	case !ok:
		return false, Refuse(FieldInvalid, "stream_options must be an object")
	}
	if so["include_usage"] == true {
		return false, nil
	}
	so["include_usage"] = true
	n.add("stream_options.include_usage set (usage chunk kept from the client)")
	return true, nil
}
