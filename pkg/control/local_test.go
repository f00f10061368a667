package control

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// C4: Call answers from the same handlers as the socket, without the token (it is for code
// inside anetd), and reads answers and refusals exactly as Client.Do does.
func TestCallDispatchesInProcessC4(t *testing.T) {
	s := NewServer("the-token", slog.New(slog.DiscardHandler))
	s.Handle("POST", "/v1/echo", func(r *http.Request) (any, error) {
		var in TrustRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			return nil, BadRequestError("body: %v", err)
		}
		if r.Header.Get(TokenHeader) != "" {
			return nil, errors.New("Call sent a token")
		}
		return TrustEntry{AID: in.AID}, nil
	})
	s.Handle("GET", "/v1/refuse", func(*http.Request) (any, error) {
		return nil, reasons.New(reasons.UnknownPeer, "peer x")
	})
	ctx := context.Background()
	var out TrustEntry
	if err := s.Call(ctx, "POST", "/v1/echo", TrustRequest{AID: "an-x"}, &out); err != nil || out.AID != "an-x" {
		t.Fatalf("Call(echo) = %+v, %v, want the handler's answer", out, err)
	}
	var re *RemoteError
	if err := s.Call(ctx, "GET", "/v1/refuse", nil, nil); !errors.As(err, &re) || re.Code != reasons.UnknownPeer || re.Status != http.StatusNotFound {
		t.Fatalf("Call(refuse) = %v, want unknown_peer with status 404", err)
	}
	if err := s.Call(ctx, "GET", "/v1/nothing-here", nil, nil); !errors.As(err, &re) || re.Status != http.StatusNotFound {
		t.Fatalf("Call(unknown path) = %v, want a 404 RemoteError", err)
	}
	if err := s.Call(ctx, "GET", "/v1/echo", nil, nil); !errors.As(err, &re) || re.Status != http.StatusMethodNotAllowed {
		t.Fatalf("Call(wrong method) = %v, want a 405 RemoteError", err)
	}
}
