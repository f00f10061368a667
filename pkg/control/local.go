package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"anet.dev/anet/pkg/httprecord"
	"anet.dev/anet/pkg/reasons"
)

// maxAnswer bounds an answer read from anetd, over the socket or in process.
const maxAnswer = 64 << 20

// Call dispatches one request to the server's handlers in process and decodes the JSON
// answer into out (when not nil), as Client.Do does over the socket: a refusal comes back as
// a *RemoteError with anetd's code. It skips the caller check and the token: it is for code
// inside anetd that has authenticated its own user (the dashboard, with its session), so
// that it reads the node through exactly the handlers the CLI uses and no second API.
// Streamed answers (HandleStream) are not for Call.
func (s *Server) Call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader = http.NoBody
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode body: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://anetd"+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httprecord.New(maxAnswer)
	s.mux.ServeHTTP(w, req)
	if w.Over() {
		return fmt.Errorf("%s %s: the answer is larger than %d bytes", method, path, maxAnswer)
	}
	return decodeAnswer(w.Status(), http.StatusText(w.Status()), w.Body(), out)
}

// decodeAnswer turns an answer's status and body into out, or into the *RemoteError the
// body names: the one reading of an answer, for the socket client and for Call.
func decodeAnswer(status int, statusText string, data []byte, out any) error {
	if status != http.StatusOK {
		var eb ErrorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			return &RemoteError{Status: status, Code: eb.Error.Code, Message: eb.Error.Message}
		}
		return &RemoteError{Status: status, Code: reasons.Internal, Message: fmt.Sprintf("anetd answered %d %s", status, statusText)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}
