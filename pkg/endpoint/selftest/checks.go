package selftest

import (
	"context"
	"strings"

	"anet.dev/anet/pkg/limits"
)

type addFunc func(name, req string, ok bool, detail string, args ...any)

// refused says whether an answer is a refusal that names the rule (E9).
func refused(status int, body string) bool {
	return status >= 400 && strings.Contains(body, "anet:")
}

func claudeChecks(ctx context.Context, r *run, add addFunc) {
	st, body := r.post(ctx, "/v1/messages", `{"model":"claude-opus-5-5","max_tokens":100000,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"anthropic-version": "2023-06-01", "x-api-key": "agent-own-key"})
	add("messages pass with model pinned, cap applied, credentials replaced", "E2 E3 E7", st == 200, "status %d: %.200s", st, body)

	for _, c := range []struct{ name, req, path, body string }{
		{"server tool web_search refused", "E4", "/v1/messages", `{"model":"x","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`},
		{"server tool in history refused", "E4", "/v1/messages", `{"model":"x","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_fetch","input":{}}]},{"role":"user","content":"go on"}]}`},
		{"mcp_servers refused", "E5", "/v1/messages", `{"model":"x","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"mcp_servers":[{"type":"url","url":"https://example.com","name":"m"}]}`},
		{"container refused", "E5", "/v1/messages", `{"model":"x","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"container":"c1"}`},
		{"image by URL refused", "E5", "/v1/messages", `{"model":"x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`},
		{"URL media inside a tool result refused", "E5", "/v1/messages", `{"model":"x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}]}]}]}`},
		{"body that is not an object refused", "E8", "/v1/messages", `[1,2,3]`},
		{"trailing data refused", "E8", "/v1/messages", `{"model":"x","max_tokens":10,"messages":[]} {}`},
		{"files API refused", "E4", "/v1/files", `{}`},
		{"batches API refused", "E4", "/v1/messages/batches", `{"requests":[]}`},
	} {
		st, body := r.post(ctx, c.path, c.body, map[string]string{"anthropic-version": "2023-06-01"})
		add(c.name, c.req, refused(st, body), "status %d: %.200s", st, body)
	}
	st, body = r.post(ctx, "/v1/messages", `{"model":"x","max_tokens":10,"messages":[]}`, map[string]string{"Content-Encoding": "gzip"})
	add("compressed body refused", "E8", refused(st, body), "status %d: %.200s", st, body)
	st, body = r.post(ctx, "/v1/messages", `{"model":"x","max_tokens":10,"messages":[]}`, map[string]string{"Authorization": "Bearer not-the-placeholder"})
	add("wrong placeholder refused", "E1", st == 401 && strings.Contains(body, "anet:"), "status %d: %.200s", st, body)
	big := `{"model":"x","max_tokens":10,"messages":[{"role":"user","content":"` + strings.Repeat("a", limits.RequestBodyBytes) + `"}]}`
	st, body = r.post(ctx, "/v1/messages", big, nil)
	add("body over "+limits.Bytes(limits.RequestBodyBytes)+" refused", "R1", refused(st, body), "status %d: %.120s", st, body)
	before := len(r.fake.Requests())
	st, _ = r.post(ctx, "/api/event_logging/batch", `{}`, nil)
	add("Claude Code's own /api/* answered locally", "E1", st < 500 && len(r.fake.Requests()) == before, "status %d, upstream requests %d → %d", st, before, len(r.fake.Requests()))
}

func codexChecks(ctx context.Context, r *run, add addFunc) {
	st, body := r.post(ctx, "/v1/responses", `{"model":"gpt-6","store":true,"input":"hi","max_output_tokens":50000}`, map[string]string{"OpenAI-Organization": "org-agent"})
	add("responses pass with store:false forced and cap applied", "E6 E3", st == 200, "status %d: %.200s", st, body)
	for _, c := range []struct{ name, req, path, body string }{
		{"hosted web_search refused", "E4", "/v1/responses", `{"model":"x","input":"hi","tools":[{"type":"web_search"}]}`},
		{"hosted tool in additional_tools refused", "E4", "/v1/responses", `{"model":"x","input":[{"type":"additional_tools","role":"developer","tools":[{"type":"code_interpreter"}]}]}`},
		{"previous_response_id refused", "E6", "/v1/responses", `{"model":"x","input":"hi","previous_response_id":"resp_1"}`},
		{"image by URL refused", "E5", "/v1/responses", `{"model":"x","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]}`},
		{"file by id refused", "E5", "/v1/chat/completions", `{"model":"x","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`},
	} {
		st, body := r.post(ctx, c.path, c.body, nil)
		add(c.name, c.req, refused(st, body), "status %d: %.200s", st, body)
	}
}

func egressChecks(r *run, add addFunc) {
	for _, c := range []struct{ name, req, target string }{
		{"CONNECT to an IP literal refused", "H4", "1.1.1.1:443"},
		{"CONNECT to a host not allowed refused", "H4", "example.com:443"},
		{"CONNECT to another port refused", "H4", "pypi.org:80"},
		{"CONNECT to a suffix of an allowed host refused", "H4", "evil.pypi.org:443"},
		{"CONNECT with userinfo refused", "H4", "pypi.org:443@evil.com:443"},
		{"CONNECT to a .local name refused", "H2", "printer.local:443"},
		{"CONNECT to the model host refused", "H3", "api.anthropic.com:443"},
	} {
		st, reason := r.connect(c.target)
		add(c.name, c.req, !strings.HasPrefix(st, "200") && reason != "", "%s (%s)", st, reason)
	}
}
