package modelproxy

import (
	"maps"
	"net/http"
	"regexp"
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

var anthropicVersionRE = regexp.MustCompile(`^20[0-9]{2}-[01][0-9]-[0-3][0-9]$`)

// checkEncoding refuses a compressed body (E8): the node inspects bytes, not a bomb.
func checkEncoding(h http.Header) *Refusal {
	for _, v := range h.Values("Content-Encoding") {
		if strings.TrimSpace(strings.ToLower(v)) != "identity" {
			return refuse(BodyEncoded, "Content-Encoding: %s", reasons.Clip(v, 40))
		}
	}
	return nil
}

// baseHeaders builds the upstream header set from nothing: an allow-list, so credentials,
// cookies, routing (x-forwarded-*, OpenAI-Organization, OpenAI-Project, chatgpt-account-id,
// anthropic-workspace-id), proxy-* and hop-by-hop headers never pass (E7).
func baseHeaders(in http.Header) http.Header {
	out := http.Header{}
	out.Set("Content-Type", "application/json")
	out.Set("Accept-Encoding", "identity")
	if a := strings.TrimSpace(in.Get("Accept")); forwardedAccept[a] {
		out.Set("Accept", a)
	}
	if ua := in.Get("User-Agent"); ua != "" {
		out.Set("User-Agent", reasons.Clip(ua, 200))
	} else {
		// Go would add its own; an empty value suppresses that.
		out["User-Agent"] = []string{""}
	}
	return out
}

func (e *Engine) anthropicHeaders(in http.Header, n *notes) (http.Header, map[string]bool, *Refusal) {
	out := baseHeaders(in)
	v := strings.TrimSpace(in.Get("anthropic-version"))
	if v == "" {
		v = defaultAnthropicVer
	} else if !anthropicVersionRE.MatchString(v) || len(in.Values("anthropic-version")) > 1 {
		return nil, nil, refuse(HeaderInvalid, "anthropic-version")
	}
	out.Set("anthropic-version", v)
	betas := map[string]bool{}
	var dropped []string
	for _, line := range in.Values("anthropic-beta") {
		for _, b := range strings.Split(line, ",") {
			b = strings.TrimSpace(b)
			if b == "" {
				continue
			}
			if allowedBetas[b] {
				betas[b] = true
			} else {
				dropped = append(dropped, reasons.Clip(b, 60))
			}
		}
	}
	if e.pinned.Context1M {
		betas[betaContext1M] = true
	}
	if len(dropped) > 0 {
		n.add("anthropic-beta dropped: %s", strings.Join(dropped, ","))
	}
	if len(betas) > 0 {
		out.Set("anthropic-beta", strings.Join(slices.Sorted(maps.Keys(betas)), ","))
	}
	return out, betas, nil
}
