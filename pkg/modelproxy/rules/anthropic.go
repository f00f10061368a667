package rules

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"anet.dev/anet/pkg/modelproxy/jsontree"
	"anet.dev/anet/pkg/reasons"
)

// anthropicFields is the allow-list of top-level Messages fields; anything else is refused
// by name, so a new server-side feature cannot slip through unseen.
var anthropicFields = map[string]bool{
	"model": true, "messages": true, "system": true, "max_tokens": true, "metadata": true,
	"stop_sequences": true, "stream": true, "temperature": true, "top_p": true, "top_k": true,
	"tools": true, "tool_choice": true, "thinking": true, "context_management": true,
	"output_config": true, "service_tier": true, "fallbacks": true,
}

// count_tokens takes no output or sampling fields.
var anthropicCountFields = map[string]bool{
	"model": true, "messages": true, "system": true, "tools": true, "tool_choice": true,
	"thinking": true, "context_management": true, "output_config": true,
}

// Client-run tool types (E4): no type or "custom", or one of these names with a version date
// (bash_20250124). Matching the whole name keeps server tools that share a prefix
// (bash_code_execution_…) out.
var anthropicClientToolRE = regexp.MustCompile(`^(bash|text_editor|computer|memory|computer_toolset|browser_toolset)_[0-9]{8}$`)

// Tool fields that exist only with the advanced-tool-use beta, which is never forwarded.
var advancedToolFields = []string{"defer_loading", "input_examples", "allowed_callers"}

// Content blocks the client may send in messages; server-tool blocks (server_tool_use,
// *_tool_result of web search, code execution and the like, mcp_*, container_upload) are not
// listed and are refused, also deep in history.
var anthropicBlocks = map[string]bool{
	"text": true, "image": true, "document": true, "tool_use": true, "tool_result": true,
	"thinking": true, "redacted_thinking": true, "search_result": true,
}

// Blocks allowed inside search_result.content.
var searchResultBlocks = map[string]bool{"text": true}

// Blocks allowed inside tool_result.content.
var anthropicToolResultBlocks = map[string]bool{"text": true, "image": true, "document": true, "search_result": true}

func (e *Engine) anthropicBody(api API, o object, betas map[string]bool, n *notes) *Refusal {
	allowed := anthropicFields
	if api == AnthropicCountTokens {
		allowed = anthropicCountFields
	}
	if r := e.topLevel(o, allowed, n); r != nil {
		return r
	}
	if api == AnthropicMessages {
		if r := e.capTokens(o, "max_tokens", "max_tokens", true, n); r != nil {
			return r
		}
		if r := e.anthropicFallbacks(o, n); r != nil {
			return r
		}
	}
	if r := e.anthropicConstraints(api, o, n); r != nil {
		return r
	}
	if r := anthropicThinking(api, o, n); r != nil {
		return r
	}
	if r := e.anthropicTools(o, betas, n); r != nil {
		return r
	}
	if r := anthropicSystem(o); r != nil {
		return r
	}
	if r := anthropicMessages(o); r != nil {
		return r
	}
	if _, ok := o["context_management"]; ok && !betas[betaContextManagement] {
		delete(o, "context_management")
		n.add("context_management dropped with its beta")
	}
	if oc, ok := o["output_config"].(object); ok {
		if _, ok := oc["effort"]; ok && !betas[betaEffort] {
			delete(oc, "effort")
			n.add("output_config.effort dropped with its beta")
		}
		if len(oc) == 0 {
			delete(o, "output_config")
		}
	}
	return nil
}

// fallbackFields are what a fallbacks[] entry may carry: the model the upstream tries next,
// and its output cap. Anything else (tools, mcp_servers, a system prompt) would be a second
// request body the top-level rules never saw (E4, E5, E9).
var fallbackFields = map[string]bool{"model": true, "max_tokens": true}

// anthropicFallbacks pins and caps each fallbacks[] entry, a second model field, and refuses
// any other field in it with the same rule's sentence as at the top level.
func (e *Engine) anthropicFallbacks(o object, n *notes) *Refusal {
	v, ok := o["fallbacks"]
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return Refuse(FieldInvalid, "fallbacks must be an array")
	}
	for i, f := range list {
		fo, ok := f.(object)
		if !ok {
			return Refuse(FieldInvalid, "fallbacks[%d] must be an object", i)
		}
		if r := fallbackExtras(fo, i); r != nil {
			return r
		}
		if m, _ := fo["model"].(string); m != e.pinned.ID {
			n.add("fallbacks[%d].model %q→%q", i, reasons.Clip(m, 60), e.pinned.ID)
		}
		fo["model"] = e.pinned.ID
		if r := e.capTokens(fo, "max_tokens", fmt.Sprintf("fallbacks[%d].max_tokens", i), true, n); r != nil {
			return r
		}
	}
	return nil
}

// fallbackExtras refuses every field of a fallbacks[] entry but model and max_tokens, naming
// the rule the field would break at the top level: mcp_servers (E5), container (E5), a
// server-run tool (E4); any other field is not allowed.
func fallbackExtras(fo object, i int) *Refusal {
	if _, ok := fo["mcp_servers"]; ok {
		return Refuse(MCPServersRefused, "fallbacks[%d].mcp_servers", i)
	}
	if _, ok := fo["container"]; ok {
		return Refuse(ContainerRefused, "fallbacks[%d].container", i)
	}
	if tools, ok := fo["tools"].([]any); ok {
		for j, t := range tools {
			to, _ := t.(object)
			if typ, _ := to["type"].(string); !anthropicClientTool(typ) {
				return Refuse(ServerToolRefused, "fallbacks[%d].tools[%d].type %q", i, j, reasons.Clip(typ, 60))
			}
		}
	}
	if k, ok := firstNotAllowed(fo, fallbackFields); ok {
		return Refuse(FieldNotAllowed, "fallbacks[%d].%s", i, reasons.Clip(k, 60))
	}
	return nil
}

// anthropicConstraints normalises what the pinned model refuses, or refuses the request.
func (e *Engine) anthropicConstraints(api API, o object, n *notes) *Refusal {
	c := e.pinned.Model.Constraints
	if c.Sampling != nil && !*c.Sampling {
		for _, k := range []string{"temperature", "top_p", "top_k"} {
			if _, ok := o[k]; ok {
				delete(o, k)
				n.add("%s dropped: %s takes only the default", k, e.pinned.ID)
			}
		}
	}
	if len(c.ThinkingTypes) > 0 {
		if th, ok := o["thinking"].(object); ok {
			t, _ := th["type"].(string)
			if !slices.Contains(c.ThinkingTypes, t) {
				if slices.Contains(c.ThinkingTypes, "adaptive") {
					o["thinking"] = object{"type": "adaptive"}
					n.add("thinking.type %q→adaptive for %s", reasons.Clip(t, 30), e.pinned.ID)
				} else {
					delete(o, "thinking")
					n.add("thinking dropped: %s refuses type %q", e.pinned.ID, reasons.Clip(t, 30))
				}
			}
		}
	}
	if c.AssistantPrefill != nil && !*c.AssistantPrefill && api == AnthropicMessages {
		if msgs, ok := o["messages"].([]any); ok && len(msgs) > 0 {
			if last, ok := msgs[len(msgs)-1].(object); ok && last["role"] == "assistant" {
				return Refuse(PrefillRefused, "messages[%d].role assistant, model %s", len(msgs)-1, e.pinned.ID)
			}
		}
	}
	return nil
}

// anthropicThinking keeps a thinking budget valid after max_tokens was capped: at least 1024
// and below max_tokens, else thinking is dropped (E3).
func anthropicThinking(api API, o object, n *notes) *Refusal {
	v, ok := o["thinking"]
	if !ok {
		return nil
	}
	th, ok := v.(object)
	if !ok {
		return Refuse(FieldInvalid, "thinking must be an object")
	}
	if th["type"] != "enabled" {
		return nil
	}
	b, ok := jsontree.Int(th["budget_tokens"])
	if !ok {
		return Refuse(FieldInvalid, "thinking.budget_tokens must be an integer")
	}
	const minBudget = 1024
	if api != AnthropicMessages {
		if b < minBudget {
			th["budget_tokens"] = json.Number(fmt.Sprint(minBudget))
			n.add("thinking.budget_tokens raised %d→%d", b, minBudget)
		}
		return nil
	}
	mt, _ := jsontree.Int(o["max_tokens"])
	nb := b
	if nb >= mt {
		nb = mt - 1
	}
	if nb < minBudget {
		nb = minBudget
	}
	if nb >= mt {
		delete(o, "thinking")
		n.add("thinking dropped: max_tokens %d leaves no valid budget", mt)
		return nil
	}
	if nb != b {
		th["budget_tokens"] = json.Number(fmt.Sprint(nb))
		n.add("thinking.budget_tokens %d→%d", b, nb)
	}
	return nil
}

func (e *Engine) anthropicTools(o object, betas map[string]bool, n *notes) *Refusal {
	v, ok := o["tools"]
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return Refuse(FieldInvalid, "tools must be an array")
	}
	for i, t := range list {
		to, ok := t.(object)
		if !ok {
			return Refuse(FieldInvalid, "tools[%d] must be an object", i)
		}
		typ, _ := to["type"].(string)
		if _, has := to["type"]; has && typ == "" {
			return Refuse(FieldInvalid, "tools[%d].type must be a string", i)
		}
		if !anthropicClientTool(typ) {
			return Refuse(ServerToolRefused, "tools[%d].type %q", i, reasons.Clip(typ, 60))
		}
		// A tool naming its own model (e.g. an advisor) is pinned and capped like the request,
		// its cap set when it has none: what that model writes is billed beside the answer,
		// and the run's reservation counts it (outputBound, K2), which it could not do for a
		// tool left to the model's own maximum.
		if _, ok := to["model"]; ok {
			to["model"] = e.pinned.ID
			if r := e.capTokens(to, "max_tokens", fmt.Sprintf("tools[%d].max_tokens", i), true, n); r != nil {
				return r
			}
		}
		if !betas[betaAdvancedToolUse] {
			for _, f := range advancedToolFields {
				if _, ok := to[f]; ok {
					delete(to, f)
					n.add("tools[%d].%s dropped with its beta", i, f)
				}
			}
		}
	}
	return nil
}

func anthropicClientTool(typ string) bool {
	if typ == "" || typ == "custom" {
		return true
	}
	return anthropicClientToolRE.MatchString(typ)
}

func anthropicSystem(o object) *Refusal {
	switch s := o["system"].(type) {
	case nil, string:
		return nil
	case []any:
		for i, b := range s {
			bo, ok := b.(object)
			if !ok || bo["type"] != "text" {
				return Refuse(BlockRefused, "system[%d] must be a text block", i)
			}
		}
		return nil
	}
	return Refuse(FieldInvalid, "system must be a string or an array of text blocks")
}

func anthropicMessages(o object) *Refusal {
	v, ok := o["messages"]
	if !ok {
		return nil
	}
	msgs, ok := v.([]any)
	if !ok {
		return Refuse(FieldInvalid, "messages must be an array")
	}
	for i, m := range msgs {
		mo, ok := m.(object)
		if !ok {
			return Refuse(FieldInvalid, "messages[%d] must be an object", i)
		}
		if c := mo["content"]; !plainContent(c) {
			if r := anthropicContent(c, contentPath("messages", i), anthropicBlocks); r != nil {
				return r
			}
		}
	}
	return nil
}

// anthropicContent checks a content value (string or block array) recursively: block types by
// allow-list, media sources inline only (E4, E5).
func anthropicContent(v any, path string, allowed map[string]bool) *Refusal {
	return contentParts(v, path, allowed, anthropicBlock)
}

func anthropicBlock(typ string, b object, list string, i int) *Refusal {
	switch typ {
	case "image", "document":
		path := indexPath(list, i)
		src, ok := b["source"].(object)
		if !ok {
			return Refuse(FieldInvalid, "%s.source must be an object", path)
		}
		st, _ := src["type"].(string)
		switch {
		case st == "base64", typ == "document" && st == "text":
			return nil
		case typ == "document" && st == "content":
			return anthropicContent(src["content"], path+".source.content", anthropicToolResultBlocks)
		}
		return Refuse(MediaRefused, "%s.source.type %q", path, reasons.Clip(st, 30))
	case "tool_result":
		if c := b["content"]; !plainContent(c) {
			return anthropicContent(c, contentPath(list, i), anthropicToolResultBlocks)
		}
	case "search_result":
		if c := b["content"]; !plainContent(c) {
			return anthropicContent(c, contentPath(list, i), searchResultBlocks)
		}
	}
	return nil
}
