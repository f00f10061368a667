// Package standin is a stand-in model service: it behaves like api.anthropic.com and
// api.openai.com where a proxy's rewrite could go wrong, served behind pkg/localca's
// throw-away CA. The endpoint's self-test battery (pkg/endpoint/selftest, shipped in
// anet-egress) runs against it, and so do the tests; it never touches the network beyond its
// own loopback listener.
package standin

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/localca"
)

// Upstream plays api.anthropic.com and api.openai.com over real TLS (test CA) and HTTP/2.
// It behaves like the real APIs where a rewrite could go wrong (unknown models, over-cap
// tokens, beta/body mismatches, haiku's constraints) and asserts on every request that the
// operator's key is present, the placeholder and agent credentials are absent, the model is
// pinned and the caps hold.
type Upstream struct {
	srv         *http.Server
	ln          net.Listener
	key         string
	placeholder string
	pinned      string

	mu     sync.Mutex     // guards the fields that follow
	models map[string]int // id → max output tokens
	// stream, when set, serves SSE responses of /v1/messages with stream:true.
	stream func(w http.ResponseWriter, f http.Flusher)
	// answer, when set, answers every request that carries the key, in place of the API.
	answer   http.HandlerFunc
	usage    Usage
	requests []Recorded
	problems []string
	// connections the upstream accepted, and how many of them are still open.
	opened, open int
	conns        map[net.Conn]bool // the open ones, for DropConnections
}

// Recorded is one request as the upstream received it.
type Recorded struct {
	Path  string
	Query string
	Proto int
	// Remote is the client's address: requests from one connection share it.
	Remote string
	Header http.Header
	Body   []byte
}

// AgentCred marks every credential a test sends as the agent; none may reach the upstream.
const AgentCred = "agent-cred-7f3a"

var fakeKnownBetas = map[string]bool{
	"claude-code-20250219": true, "interleaved-thinking-2025-05-14": true, "context-management-2025-06-27": true,
	"effort-2025-11-24": true, "fine-grained-tool-streaming-2025-05-14": true, "token-efficient-tools-2025-02-19": true,
	"prompt-caching-2024-07-31": true, "context-1m-2025-08-07": true, "advanced-tool-use-2025-11-20": true,
}

// NewUpstream starts the fake on a loopback port over TLS with ca's leaf and HTTP/2. key is
// the operator's key it demands, placeholder the run token that must never arrive, pinned the
// only model it accepts as correct.
func NewUpstream(ca *localca.Authority, key, placeholder, pinned string) *Upstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		// Only its own loopback: a machine that cannot listen there cannot run anything of
		// the node either.
		panic(fmt.Sprintf("standin: listen on loopback: %v", err))
	}
	return ServeUpstream(ln, ca, key, placeholder, pinned)
}

// ServeUpstream is NewUpstream on a listener the caller chose: the hosts rig's stand-in
// (integration/hosts/standin) plays api.anthropic.com on a guest's 127.0.0.1:443, where a
// release build reaches it through /etc/hosts and the guest's own CA store.
func ServeUpstream(ln net.Listener, ca *localca.Authority, key, placeholder, pinned string) *Upstream {
	f := &Upstream{key: key, placeholder: placeholder, pinned: pinned, usage: Usage{Input: 3, Output: 1}, models: map[string]int{
		"claude-opus-5-5": 128000, "claude-sonnet-5-5": 64000, "claude-haiku-5-5": 64000,
		"gpt-6": 128000, "gpt-6-mini": 128000, "gpt-6-luna": 64000,
	}}
	f.conns = map[net.Conn]bool{}
	f.ln = ln
	f.srv = &http.Server{
		Handler: http.HandlerFunc(f.serve),
		// HTTP/2 over TLS, as the real services speak it: ServeTLS configures it.
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.Cert}, NextProtos: []string{"h2", "http/1.1"}},
		// Handshake failures are expected in tests that present an untrusted CA.
		ErrorLog:  log.New(io.Discard, "", 0),
		ConnState: f.connState,
	}
	go f.srv.ServeTLS(ln, "", "")
	return f
}

// Addr is the fake's host:port.
func (f *Upstream) Addr() string { return f.ln.Addr().String() }

// Close stops the fake and closes every connection to it.
func (f *Upstream) Close() { f.srv.Close() }

// DropConnections closes the connections the proxy keeps open to the fake.
func (f *Upstream) DropConnections() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
}

func (f *Upstream) connState(c net.Conn, s http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch s {
	case http.StateNew:
		f.opened++
		f.open++
		f.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		f.open--
		delete(f.conns, c)
	}
}

// Connections returns how many connections the fake accepted and how many are open now.
func (f *Upstream) Connections() (opened, open int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened, f.open
}

// Problems lists every assertion that failed on a request so far.
func (f *Upstream) Problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.problems...)
}

// SetStream makes /v1/messages with stream:true answer through fn.
func (f *Upstream) SetStream(fn func(w http.ResponseWriter, fl http.Flusher)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stream = fn
}

// SetAnswer makes fn answer every request that carries the operator's key, whatever its
// path and body: an upstream that misbehaves (echoes the key, compresses unasked).
func (f *Upstream) SetAnswer(fn http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = fn
}

// SetUsage sets the usage every later answer reports (K1), in each API's own shape.
func (f *Upstream) SetUsage(u Usage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usage = u
}

func (f *Upstream) currentUsage() Usage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.usage
}

// ForgetModels makes the fake know no model, so that it answers 404 like the API does.
func (f *Upstream) ForgetModels() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.models = map[string]int{}
}

func (f *Upstream) problem(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

// Requests returns every request received so far.
func (f *Upstream) Requests() []Recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Recorded(nil), f.requests...)
}

func apiError(w http.ResponseWriter, anthropic bool, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if anthropic {
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": typ, "message": msg}})
}

func (f *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, Recorded{Path: r.URL.Path, Query: r.URL.RawQuery, Proto: r.ProtoMajor, Remote: r.RemoteAddr, Header: r.Header.Clone(), Body: body})
	models := f.models
	f.mu.Unlock()
	anthropic := strings.HasPrefix(r.URL.Path, "/v1/messages")

	// Assertions on every request.
	var dump bytes.Buffer
	r.Header.Write(&dump)
	for _, secret := range []string{f.placeholder, AgentCred} {
		if bytes.Contains(dump.Bytes(), []byte(secret)) || bytes.Contains(body, []byte(secret)) {
			f.problem("%s: %q reached the upstream", r.URL.Path, secret)
		}
	}
	if r.ProtoMajor != 2 {
		f.problem("%s: protocol HTTP/%d, want HTTP/2", r.URL.Path, r.ProtoMajor)
	}
	if ae := r.Header.Get("Accept-Encoding"); ae != "identity" {
		f.problem("%s: Accept-Encoding %q, want identity", r.URL.Path, ae)
	}
	if r.ContentLength != int64(len(body)) {
		f.problem("%s: Content-Length %d, body %d bytes", r.URL.Path, r.ContentLength, len(body))
	}
	if anthropic {
		if r.Header.Get("X-Api-Key") != f.key || r.Header.Get("Authorization") != "" {
			f.problem("%s: key header wrong (x-api-key present %v, authorization present %v)", r.URL.Path, r.Header.Get("X-Api-Key") != "", r.Header.Get("Authorization") != "")
			apiError(w, true, 401, "authentication_error", "invalid x-api-key")
			return
		}
	} else if r.Header.Get("Authorization") != "Bearer "+f.key || r.Header.Get("X-Api-Key") != "" {
		f.problem("%s: Authorization is not the operator's key", r.URL.Path)
		apiError(w, false, 401, "invalid_request_error", "Incorrect API key provided")
		return
	}
	f.mu.Lock()
	answer := f.answer
	f.mu.Unlock()
	if answer != nil {
		answer(w, r)
		return
	}
	var o map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&o); err != nil {
		apiError(w, anthropic, 400, "invalid_request_error", "invalid JSON")
		return
	}
	model, _ := o["model"].(string)
	if model != f.pinned {
		f.problem("%s: model %q, want pinned %q", r.URL.Path, model, f.pinned)
	}
	maxOut, known := models[model]
	if !known {
		apiError(w, anthropic, 404, "not_found_error", "model: "+model)
		return
	}
	if anthropic {
		f.anthropic(w, r, o, maxOut)
		return
	}
	f.openai(w, r, o)
}

func num(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func (f *Upstream) anthropic(w http.ResponseWriter, r *http.Request, o map[string]any, maxOut int) {
	betas := map[string]bool{}
	for _, line := range r.Header.Values("Anthropic-Beta") {
		for _, b := range strings.Split(line, ",") {
			b = strings.TrimSpace(b)
			if !fakeKnownBetas[b] {
				apiError(w, true, 400, "invalid_request_error", "Unexpected value(s) `"+b+"` for the `anthropic-beta` header")
				return
			}
			betas[b] = true
		}
	}
	extra := func(field string) {
		apiError(w, true, 400, "invalid_request_error", field+": Extra inputs are not permitted")
	}
	if _, ok := o["context_management"]; ok && !betas["context-management-2025-06-27"] {
		extra("context_management")
		return
	}
	if oc, ok := o["output_config"].(map[string]any); ok && oc["effort"] != nil && !betas["effort-2025-11-24"] {
		extra("output_config.effort")
		return
	}
	if tools, ok := o["tools"].([]any); ok {
		for i, t := range tools {
			if tm, _ := t.(map[string]any); tm["defer_loading"] != nil && !betas["advanced-tool-use-2025-11-20"] {
				extra(fmt.Sprintf("tools.%d.defer_loading", i))
				return
			}
		}
	}
	countTokens := r.URL.Path == "/v1/messages/count_tokens"
	mt, hasMT := num(o["max_tokens"])
	switch {
	case countTokens && o["max_tokens"] != nil:
		extra("max_tokens")
		return
	case !countTokens && !hasMT:
		apiError(w, true, 400, "invalid_request_error", "max_tokens: Field required")
		return
	case !countTokens && mt > int64(maxOut):
		apiError(w, true, 400, "invalid_request_error", "max_tokens: too large")
		return
	}
	if !countTokens && mt > limits.OutputTokens {
		f.problem("max_tokens %d above the cap", mt)
	}
	if fb, ok := o["fallbacks"].([]any); ok {
		for i, x := range fb {
			xm, _ := x.(map[string]any)
			if xm["model"] != f.pinned {
				f.problem("fallbacks[%d].model %v, want %s", i, xm["model"], f.pinned)
			}
			if n, _ := num(xm["max_tokens"]); n > limits.OutputTokens {
				f.problem("fallbacks[%d].max_tokens %d above the cap", i, n)
			}
		}
	}
	if th, ok := o["thinking"].(map[string]any); ok && th["type"] == "enabled" {
		if f.pinned == "claude-haiku-5-5" {
			apiError(w, true, 400, "invalid_request_error", "thinking.type: enabled is not supported for this model")
			return
		}
		b, _ := num(th["budget_tokens"])
		if b < 1024 || (!countTokens && b >= mt) {
			apiError(w, true, 400, "invalid_request_error", "thinking.budget_tokens: must be >= 1024 and less than max_tokens")
			return
		}
	}
	if f.pinned == "claude-haiku-5-5" {
		for _, k := range []string{"temperature", "top_p", "top_k"} {
			if o[k] != nil {
				apiError(w, true, 400, "invalid_request_error", k+": not supported for this model")
				return
			}
		}
	}
	if countTokens {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":12}`)
		return
	}
	f.mu.Lock()
	stream := f.stream
	f.mu.Unlock()
	if o["stream"] == true && stream != nil {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		stream(w, w.(http.Flusher))
		return
	}
	u := f.currentUsage()
	if o["stream"] == true {
		f.anthropicStream(w, u)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Anthropic-Organization-Id", "org-secret-id")
	w.Header().Set("Request-Id", "req_1")
	fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn"%s}`, f.pinned, u.anthropic(true))
}

func (f *Upstream) openai(w http.ResponseWriter, r *http.Request, o map[string]any) {
	if o["store"] != false {
		f.problem("%s: store %v, want false", r.URL.Path, o["store"])
	}
	for _, k := range []string{"max_output_tokens", "max_completion_tokens", "max_tokens"} {
		if n, ok := num(o[k]); ok && n > limits.OutputTokens {
			f.problem("%s: %s %d above the cap", r.URL.Path, k, n)
		}
	}
	u := f.currentUsage()
	if o["stream"] == true && (r.URL.Path == "/v1/responses" || r.URL.Path == "/v1/chat/completions") {
		f.openaiStream(w, r.URL.Path, o, u)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Openai-Organization", "org-secret")
	switch r.URL.Path {
	case "/v1/responses":
		if _, ok := o["max_output_tokens"]; !ok {
			f.problem("responses without max_output_tokens")
		}
		fmt.Fprintf(w, `{"id":"resp_1","object":"response","model":%q,"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}]%s}`, f.pinned, u.responses())
	case "/v1/responses/compact":
		fmt.Fprintf(w, `{"id":"cmp_1","object":"response.compaction","output":[]%s}`, u.responses())
	case "/v1/chat/completions":
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hello"}}]%s}`, f.pinned, u.chat())
	default:
		apiError(w, false, 404, "invalid_request_error", "unknown path")
	}
}
