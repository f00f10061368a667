package demo

import (
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"anet.dev/anet/pkg/localca"
)

// StandIn is the stand-in model service of `make demo`: it plays api.anthropic.com's
// Messages API for the demo's one task, so that the demo needs no key and no network. It is
// not a model and not for real use: it listens on a unix socket only (a release anet-egress
// dials model services over TCP and has no way to reach it), with a certificate from a CA
// made for this demo and deleted with it; only a demo build's redirect hook
// (ANET_TEST_REDIRECTS, compiled into anettest builds only) sends api.anthropic.com to it.
type StandIn struct {
	// Socket is the unix socket it serves on.
	Socket string
	// CAFile holds the demo CA's certificate (PEM), for the demo node's SSL_CERT_FILE.
	CAFile string

	key      string
	srv      *http.Server
	requests atomic.Int64
	mu       sync.Mutex
	problems []string
}

// StartStandIn serves the stand-in on socket, expecting key (the demo's keys file's
// anthropic entry) on every request, and writes its CA to caFile.
func StartStandIn(socket, caFile, key string) (*StandIn, error) {
	ca, err := localca.New("api.anthropic.com")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(caFile, ca.PEM, 0o644); err != nil {
		return nil, fmt.Errorf("stand-in model: %w", err)
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("stand-in model: %w", err)
	}
	s := &StandIn{Socket: socket, CAFile: caFile, key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{ca.Cert}}
	go s.srv.ServeTLS(ln, "", "")
	return s, nil
}

// Requests is how many requests reached the stand-in.
func (s *StandIn) Requests() int64 { return s.requests.Load() }

// Problems are what the stand-in found wrong in the requests it got (a missing key, a
// placeholder where the key belongs).
func (s *StandIn) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// Close stops it.
func (s *StandIn) Close() { s.srv.Close() }

func (s *StandIn) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// messages answers one Messages request with a fixed, clearly labelled text and a usage the
// node meters like a real one.
func (s *StandIn) messages(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Api-Key")), []byte(s.key)) != 1 {
		// The node must send the operator's key, never the run's placeholder.
		s.problem("a request without the demo key")
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, http.StatusUnauthorized)
		return
	}
	var req struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Messages  []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: required"}}`, http.StatusBadRequest)
		return
	}
	task := lastText(req.Messages[len(req.Messages)-1].Content)
	answer := fmt.Sprintf("Hello from the demo's stand-in model (not a real model). You asked: %q. A real node would answer with the agent and model its operator chose.", clip(task, 120))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "msg_demo", "type": "message", "role": "assistant", "model": req.Model,
		"content":     []map[string]string{{"type": "text", "text": answer}},
		"stop_reason": "end_turn",
		"usage":       map[string]int{"input_tokens": len(strings.Fields(task)) + 12, "output_tokens": len(strings.Fields(answer))},
	})
}

// lastText is the text of a message's content (a string, or text blocks).
func lastText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type, Text string
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, " ")
	}
	return ""
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

var errNoAnswer = errors.New("no text in the model's answer")
