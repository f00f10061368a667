package control

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// A streamed answer reaches the client event by event, while the handler is still working
// (the second event is only sent after the client has seen the first), then the result; an
// error ends it with its code.
func TestStreamEventsArriveAsTheyHappen(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "control.sock")
	tok, _ := NewToken()
	s := NewServer(tok, slog.New(slog.DiscardHandler))
	seen := make(chan string, 4)
	s.HandleStream("POST", "/v1/stream", func(r *http.Request, emit func(any) error) (any, error) {
		emit(map[string]string{"stage": "one"})
		select {
		case <-seen: // the client has the first event before the second is made
		case <-time.After(30 * time.Second):
			return nil, errors.New("the first event did not reach the client while the handler ran")
		}
		emit(map[string]string{"stage": "two"})
		if r.URL.Query().Get("fail") != "" {
			return nil, reasons.New(reasons.HelperDown, "sandboxd")
		}
		return map[string]bool{"ok": true}, nil
	})
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	c := NewClient(sock, tok)
	var got []string
	onEvent := func(ev json.RawMessage) error {
		var m map[string]string
		json.Unmarshal(ev, &m)
		got = append(got, m["stage"])
		seen <- m["stage"]
		return nil
	}
	var out map[string]bool
	if err := c.DoStream(context.Background(), "POST", "/v1/stream", struct{}{}, onEvent, &out); err != nil || !out["ok"] {
		t.Fatalf("DoStream = %v, %v", err, out)
	}
	if len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Fatalf("events = %v, want one, two", got)
	}
	got = nil
	err = c.DoStream(context.Background(), "POST", "/v1/stream?fail=1", struct{}{}, onEvent, &out)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != reasons.HelperDown || len(got) != 2 {
		t.Fatalf("DoStream to a failing handler = %v after %v, want helper_down after both events", err, got)
	}
}
