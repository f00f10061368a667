package rules

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"anet.dev/anet/pkg/reasons"
)

// allowedBetas is the fixed list of anthropic-beta values forwarded (E7). Everything else the
// agent asks for is dropped; the body fields a dropped beta enables are dropped with it
// (betaFields), so the upstream does not answer "Extra inputs are not permitted".
// context-1m is not here: it is added only when the operator pins a `[1m]` model, because it
// changes the price.
var allowedBetas = map[string]bool{
	"claude-code-20250219":                   true,
	"interleaved-thinking-2025-05-14":        true,
	"context-management-2025-06-27":          true,
	"effort-2025-11-24":                      true,
	"fine-grained-tool-streaming-2025-05-14": true,
	"token-efficient-tools-2025-02-19":       true,
	"prompt-caching-2024-07-31":              true,
}

const (
	betaContextManagement = "context-management-2025-06-27"
	betaEffort            = "effort-2025-11-24"
	betaAdvancedToolUse   = "advanced-tool-use-2025-11-20"
	betaContext1M         = "context-1m-2025-08-07"
	defaultAnthropicVer   = "2023-06-01"
)

// forwardedAccept are the Accept values worth forwarding; anything else is dropped and the
// upstream's default applies.
var forwardedAccept = map[string]bool{"application/json": true, "text/event-stream": true, "*/*": true}

// anthropicVersion reports whether v is a date as the anthropic-version header carries it:
// 20YY-MM-DD with M in [01] and the first day digit in [0-3].
func anthropicVersion(v string) bool {
	if len(v) != 10 || v[0] != '2' || v[1] != '0' || v[4] != '-' || v[7] != '-' || v[5] > '1' || v[8] > '3' {
		return false
	}
	for _, i := range []int{2, 3, 5, 6, 8, 9} {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// CheckEncoding refuses a compressed body (E8): the node inspects bytes, not a bomb. The proxy
// holds an upstream's answer to it too (E1: the key could pass in a compressed one unseen).
func CheckEncoding(h http.Header) *Refusal {
	for _, v := range h["Content-Encoding"] {
		if strings.TrimSpace(strings.ToLower(v)) != "identity" {
			return Refuse(BodyEncoded, "Content-Encoding: %s", reasons.Clip(v, 40))
		}
	}
	return nil
}

// baseHeaders builds the upstream header set from nothing: an allow-list, so credentials,
// cookies, routing (x-forwarded-*, OpenAI-Organization, OpenAI-Project, chatgpt-account-id,
// anthropic-workspace-id), proxy-* and hop-by-hop headers never pass (E7).
func baseHeaders(in http.Header) http.Header {
	// Keys in canonical form, set directly: this runs for every request. The values share
	// one backing array, each a slice of capacity one, so an append to one copies it.
	out := make(http.Header, 8)
	vals := make([]string, 4)
	vals[0], vals[1] = "application/json", "identity"
	out["Content-Type"], out["Accept-Encoding"] = vals[0:1:1], vals[1:2:2]
	if a := strings.TrimSpace(hget(in, "Accept")); forwardedAccept[a] {
		vals[2] = a
		out["Accept"] = vals[2:3:3]
	}
	// Go would add its own User-Agent; an empty value suppresses that.
	vals[3] = reasons.Clip(hget(in, "User-Agent"), 200)
	out["User-Agent"] = vals[3:4:4]
	return out
}

func (e *Engine) anthropicHeaders(in http.Header, n *notes) (http.Header, map[string]bool, *Refusal) {
	out := baseHeaders(in)
	v := strings.TrimSpace(hget(in, "Anthropic-Version"))
	if v == "" {
		v = defaultAnthropicVer
	} else if !anthropicVersion(v) || len(in["Anthropic-Version"]) > 1 {
		return nil, nil, Refuse(HeaderInvalid, "anthropic-version")
	}
	out["Anthropic-Version"] = []string{v}
	var betas map[string]bool // made only when one is kept; reading a nil map is false
	var dropped []string
	for _, line := range in["Anthropic-Beta"] {
		for b := range strings.SplitSeq(line, ",") {
			b = strings.TrimSpace(b)
			if b == "" {
				continue
			}
			if allowedBetas[b] {
				if betas == nil {
					betas = map[string]bool{}
				}
				betas[b] = true
			} else {
				dropped = append(dropped, reasons.Clip(b, 60))
			}
		}
	}
	if e.pinned.Context1M {
		if betas == nil {
			betas = map[string]bool{}
		}
		betas[betaContext1M] = true
	}
	if len(dropped) > 0 {
		n.add("anthropic-beta dropped: %s", strings.Join(dropped, ","))
	}
	if len(betas) > 0 {
		out["Anthropic-Beta"] = []string{strings.Join(slices.Sorted(maps.Keys(betas)), ",")}
	}
	return out, betas, nil
}

// hget is Header.Get for a key already in canonical form, without canonicalising it again
// on every request (Get looks up the canonical form of its key, so the result is the same).
func hget(h http.Header, canonical string) string {
	if v := h[canonical]; len(v) > 0 {
		return v[0]
	}
	return ""
}
