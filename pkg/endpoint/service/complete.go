package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/httprecord"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/modelproxy"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
)

// maxCompletionReply bounds the upstream answer read back (the answer itself is capped at
// 8192 tokens; the JSON around it is small).
const maxCompletionReply = 4 << 20

// handleComplete is the openai back-end (P3): one chat completion for a task, made here
// because only this process holds the keys. The request goes through the same model proxy an
// agent's requests meet, so the model is pinned (E2), the output capped (E3), store:false
// set (E6) and the upstream verified (E11); anetd sees only the answer text.
//
// The upstream is https://api.openai.com (the openai key), or the operator's api_base (the
// custom key) when it is set.
func (s *Service) handleComplete(ctx context.Context, req *privsep.Request) (privsep.Reply, error) {
	var in egresswire.CompleteRequest
	if err := req.Decode(&in); err != nil {
		return privsep.Reply{}, err
	}
	if err := in.Validate(); err != nil {
		return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: err.Error()}
	}
	rep, err := s.complete(ctx, in)
	if err != nil {
		return privsep.Reply{}, coded(err)
	}
	return privsep.Reply{Body: rep}, nil
}

func (s *Service) complete(ctx context.Context, in egresswire.CompleteRequest) (egresswire.CompleteReply, error) {
	up, err := upstream.ForCompletion(in.APIBase)
	if err != nil {
		return egresswire.CompleteReply{}, fmt.Errorf("complete: %w", err)
	}
	key, ok := s.currentKeys().Get(up.KeyProvider)
	if !ok {
		return egresswire.CompleteReply{}, fmt.Errorf("complete: %w", reasons.New(reasons.NoAPIKey, "provider "+up.KeyProvider))
	}
	cat, err := s.currentCatalog()
	if err != nil {
		return egresswire.CompleteReply{}, fmt.Errorf("complete: %w", err)
	}
	eng, err := rules.NewEngine(up, in.Model, cat)
	if err != nil {
		return egresswire.CompleteReply{}, fmt.Errorf("complete: %w", err)
	}
	ph, err := endpoint.NewPlaceholder()
	if err != nil {
		return egresswire.CompleteReply{}, fmt.Errorf("complete: %w", err)
	}
	proxy, err := modelproxy.New(eng, up, modelproxy.Options{Placeholder: ph, Key: key, Allowance: in.Allowance, RootCAs: s.rootCAs, Logger: s.log.With("run", in.RunID, "backend", "openai")})
	if err != nil {
		return egresswire.CompleteReply{}, fmt.Errorf("complete: %w", err)
	}
	defer proxy.Close()
	body, err := json.Marshal(map[string]any{
		"model":                 eng.Model(),
		"messages":              []map[string]string{{"role": "user", "content": in.Task}},
		"max_completion_tokens": limits.OutputTokens,
		"store":                 false,
	})
	if err != nil {
		return egresswire.CompleteReply{}, fmt.Errorf("complete: %w", err)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://endpoint/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return egresswire.CompleteReply{}, fmt.Errorf("complete: %w", err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+ph)
	w := httprecord.New(maxCompletionReply)
	proxy.ServeHTTP(w, r)
	// The call is metered like an agent's requests (K1); the reply carries its cost, also
	// when the model gave no answer.
	proxy.Finish(0)
	spend := proxy.Usage().Spend
	status := w.Status()
	if code := reasons.Code(w.Header().Get("X-Anet-Reason")); code == reasons.SpendLimit {
		// Refused before it left: the task cannot be answered within today's caps (K2).
		return egresswire.CompleteReply{}, fmt.Errorf("complete: %w", reasons.New(code, reasons.Clip(strings.TrimSpace(string(w.Body())), 300)))
	}
	failed := func(format string, args ...any) (egresswire.CompleteReply, error) {
		return egresswire.CompleteReply{Model: eng.Model(), Status: status, Spend: &spend, Failed: fmt.Sprintf(format, args...)}, nil
	}
	if status != http.StatusOK {
		// A service may quote the credential it refused; the reply is stored and shown (F3),
		// and the proxy has redacted the key from it as from every answer (E1).
		return failed("complete: upstream answered %d: %s", status, reasons.Clip(strings.TrimSpace(string(w.Body())), 300))
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(w.Body(), &out); err != nil {
		return failed("complete: upstream answer is not a chat completion: %v", err)
	}
	if len(out.Choices) == 0 {
		return failed("complete: upstream answer has no choice")
	}
	return egresswire.CompleteReply{Text: out.Choices[0].Message.Content, Model: eng.Model(), Status: status, Spend: &spend}, nil
}
