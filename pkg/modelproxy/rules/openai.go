package rules

import (
	"encoding/json"
	"fmt"
	"strings"

	"anet.dev/anet/pkg/modelproxy/jsontree"
	"anet.dev/anet/pkg/reasons"
)

// Top-level Responses fields allowed; storage fields are refused with their own reason.
var responsesFields = map[string]bool{
	"model": true, "input": true, "instructions": true, "max_output_tokens": true,
	"metadata": true, "parallel_tool_calls": true, "reasoning": true, "store": true,
	"stream": true, "stream_options": true, "temperature": true, "top_p": true, "text": true,
	"tool_choice": true, "tools": true, "truncation": true, "user": true, "include": true,
	"prompt_cache_key": true, "prompt_cache_retention": true, "safety_identifier": true,
	"service_tier": true, "client_metadata": true, "top_logprobs": true, "max_tool_calls": true,
}

// Fields that need server-side storage (E6).
var storageFields = []string{"previous_response_id", "background", "conversation", "prompt"}

var chatFields = map[string]bool{
	"model": true, "messages": true, "max_completion_tokens": true, "max_tokens": true, "n": true,
	"stream": true, "stream_options": true, "temperature": true, "top_p": true, "tools": true,
	"tool_choice": true, "parallel_tool_calls": true, "response_format": true, "seed": true,
	"stop": true, "user": true, "logprobs": true, "top_logprobs": true,
	"presence_penalty": true, "frequency_penalty": true, "logit_bias": true,
	"reasoning_effort": true, "metadata": true, "store": true, "service_tier": true,
	"prediction": true, "verbosity": true, "prompt_cache_key": true, "safety_identifier": true,
}

// Client-run Responses tool types (E4); shell only with a local environment, tool_search only
// with client execution, namespace checked recursively.
var responsesClientTools = map[string]bool{
	"function": true, "custom": true, "local_shell": true, "shell": true, "apply_patch": true,
	"computer": true, "computer_use_preview": true, "namespace": true, "tool_search": true,
}

// Input item types a client may send; hosted-tool calls (web_search_call, file_search_call,
// code_interpreter_call, image_generation_call, mcp_*) are refused, item_reference needs storage.
var responsesItems = map[string]bool{
	"message": true, "function_call": true, "function_call_output": true,
	"custom_tool_call": true, "custom_tool_call_output": true, "reasoning": true,
	"local_shell_call": true, "local_shell_call_output": true, "shell_call": true,
	"shell_call_output": true, "apply_patch_call": true, "apply_patch_call_output": true,
	"computer_call": true, "computer_call_output": true, "compaction": true,
	// Codex's "responses lite" models carry the client's tools in an input item; its tools
	// go through the same allowlist as top-level tools (E4).
	"additional_tools": true,
}

var responsesParts = map[string]bool{
	"input_text": true, "input_image": true, "input_file": true, "output_text": true,
	"refusal": true, "summary_text": true, "reasoning_text": true, "input_audio": true,
}

var chatParts = map[string]bool{"text": true, "image_url": true, "input_audio": true, "file": true, "refusal": true}

func (e *Engine) openAIBody(api API, o object, n *notes) *Refusal {
	allowed := chatFields
	if api != OpenAIChat {
		allowed = responsesFields
	}
	for _, f := range storageFields {
		if v, ok := o[f]; ok {
			if isTruthy(v) {
				return Refuse(StorageRefused, "%s", f)
			}
			delete(o, f)
		}
	}
	if _, ok := o["web_search_options"]; ok {
		return Refuse(ServerToolRefused, "web_search_options")
	}
	if r := e.topLevel(o, allowed, n); r != nil {
		return r
	}
	if s, ok := o["store"]; !ok || s != false {
		n.add("store forced false")
	}
	o["store"] = false
	switch api {
	case OpenAIChat:
		return e.chatBody(o, n)
	case OpenAICompact:
		// Assumption: compact has no output-token field of its own; one sent is capped.
		if r := e.capTokens(o, "max_output_tokens", "max_output_tokens", false, n); r != nil {
			return r
		}
	default:
		if r := e.capTokens(o, "max_output_tokens", "max_output_tokens", true, n); r != nil {
			return r
		}
	}
	if r := responsesTools(o["tools"], "tools"); r != nil {
		return r
	}
	return responsesInput(o["input"])
}

func (e *Engine) chatBody(o object, n *notes) *Refusal {
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		if r := e.capTokens(o, k, k, false, n); r != nil {
			return r
		}
	}
	// Looked at after capping, which drops a null: a field sent as null is not set, and a
	// request whose only length fields were null gets the cap like one that sent none.
	_, hasMax := o["max_tokens"]
	_, hasMaxC := o["max_completion_tokens"]
	if !hasMax && !hasMaxC {
		// api.openai.com's reasoning models take only max_completion_tokens; compatible
		// services more often know max_tokens.
		k := "max_tokens"
		if e.up.CatalogProvider == "openai" {
			k = "max_completion_tokens"
		}
		o[k] = json.Number(fmt.Sprint(e.cap))
		n.add("%s set to %d", k, e.cap)
	}
	if v, ok := o["n"]; ok && v != nil {
		i, ok := jsontree.Int(v)
		if !ok || i < 1 {
			return Refuse(FieldInvalid, "n must be a positive integer")
		}
		if i > 1 {
			o["n"] = json.Number("1")
			n.add("n capped %d→1", i)
		}
	}
	if v, ok := o["tools"]; ok {
		list, ok := v.([]any)
		if !ok {
			return Refuse(FieldInvalid, "tools must be an array")
		}
		for i, t := range list {
			to, _ := t.(object)
			typ, _ := to["type"].(string)
			if typ != "function" && typ != "custom" {
				return Refuse(ServerToolRefused, "tools[%d].type %q", i, reasons.Clip(typ, 60))
			}
		}
	}
	msgs, ok := o["messages"].([]any)
	if !ok {
		if _, present := o["messages"]; present {
			return Refuse(FieldInvalid, "messages must be an array")
		}
		return nil
	}
	for i, m := range msgs {
		mo, ok := m.(object)
		if !ok {
			return Refuse(FieldInvalid, "messages[%d] must be an object", i)
		}
		if c := mo["content"]; !plainContent(c) {
			if r := contentParts(c, contentPath("messages", i), chatParts, chatPart); r != nil {
				return r
			}
		}
		if tcs, ok := mo["tool_calls"].([]any); ok {
			for j, tc := range tcs {
				tco, _ := tc.(object)
				typ, _ := tco["type"].(string)
				if typ != "function" && typ != "custom" {
					return Refuse(BlockRefused, "messages[%d].tool_calls[%d].type %q", i, j, reasons.Clip(typ, 60))
				}
			}
		}
	}
	return nil
}

// chatPart refuses media by URL or provider file id in a chat content part (E5).
func chatPart(typ string, p object, list string, i int) *Refusal {
	switch typ {
	case "image_url":
		iu, _ := p["image_url"].(object)
		u, _ := iu["url"].(string)
		if !isDataURL(u) {
			return Refuse(MediaRefused, "%s.image_url.url", indexPath(list, i))
		}
	case "file":
		f, _ := p["file"].(object)
		if _, ok := f["file_id"]; ok || f["file_data"] == nil {
			return Refuse(MediaRefused, "%s.file", indexPath(list, i))
		}
	}
	return nil
}

func responsesTools(v any, path string) *Refusal {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return Refuse(FieldInvalid, "%s must be an array", path)
	}
	for i, t := range list {
		tp := indexPath(path, i)
		to, ok := t.(object)
		if !ok {
			return Refuse(FieldInvalid, "%s must be an object", tp)
		}
		typ, _ := to["type"].(string)
		if !responsesClientTools[typ] {
			return Refuse(ServerToolRefused, "%s.type %q", tp, reasons.Clip(typ, 60))
		}
		switch typ {
		case "shell":
			if env, ok := to["environment"]; ok && env != nil {
				eo, _ := env.(object)
				if eo["type"] != "local" {
					return Refuse(ServerToolRefused, "%s.environment: only a local shell", tp)
				}
			}
		case "tool_search":
			if to["execution"] != "client" {
				return Refuse(ServerToolRefused, "%s.execution: only client", tp)
			}
		case "namespace":
			if r := responsesTools(to["tools"], tp+".tools"); r != nil {
				return r
			}
		}
	}
	return nil
}

func responsesInput(v any) *Refusal {
	switch in := v.(type) {
	case nil, string:
		return nil
	case []any:
		for i, it := range in {
			ip := indexPath("input", i)
			io, ok := it.(object)
			if !ok {
				return Refuse(FieldInvalid, "%s must be an object", ip)
			}
			typ, _ := io["type"].(string)
			if typ == "" && io["role"] != nil {
				typ = "message"
			}
			if typ == "item_reference" {
				return Refuse(StorageRefused, "%s.type item_reference", ip)
			}
			if !responsesItems[typ] {
				return Refuse(BlockRefused, "%s.type %q", ip, reasons.Clip(typ, 60))
			}
			var r *Refusal
			switch typ {
			case "message":
				r = responsesContent(io["content"], ip+".content")
			case "function_call_output", "custom_tool_call_output":
				r = responsesContent(io["output"], ip+".output")
			case "computer_call_output":
				if out, ok := io["output"].(object); ok {
					r = responsesPart(out, ip+".output")
				}
			case "additional_tools":
				r = responsesTools(io["tools"], ip+".tools")
			}
			if r != nil {
				return r
			}
		}
		return nil
	}
	return Refuse(FieldInvalid, "input must be a string or an array")
}

func responsesContent(v any, path string) *Refusal {
	return contentParts(v, path, responsesParts, func(_ string, p object, list string, i int) *Refusal {
		return responsesPart(p, indexPath(list, i))
	})
}

// responsesPart refuses media by URL or provider file id (E5); data: URLs and file_data pass.
func responsesPart(p object, path string) *Refusal {
	if _, ok := p["file_id"]; ok && p["file_id"] != nil {
		return Refuse(MediaRefused, "%s.file_id", path)
	}
	for _, k := range []string{"image_url", "file_url"} {
		if u, ok := p[k]; ok && u != nil {
			s, _ := u.(string)
			if !isDataURL(s) {
				return Refuse(MediaRefused, "%s.%s", path, k)
			}
		}
	}
	return nil
}

func isDataURL(s string) bool { return strings.HasPrefix(strings.ToLower(s), "data:") }
