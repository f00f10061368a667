package control

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"anet.dev/anet/pkg/reasons"
)

// StreamFunc answers one request with a sequence of JSON values: emit sends each one as soon
// as it is known (a test run's stages as they happen); the returned value, or error, ends the
// answer.
type StreamFunc func(r *http.Request, emit func(any) error) (any, error)

// StreamLine is one line of a streamed answer (application/x-ndjson): an event, or, last,
// the result or the error.
type StreamLine struct {
	Event  json.RawMessage `json:"event,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    reasons.Code `json:"code"`
		Message string       `json:"message"`
	} `json:"error,omitempty"`
}

// HandleStream registers h for a method and path; its answer is one JSON object per line,
// flushed as it is written.
func (s *Server) HandleStream(method, path string, h StreamFunc) {
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		rc := http.NewResponseController(w)
		write := func(l StreamLine) error {
			b, err := json.Marshal(l)
			if err != nil {
				return err
			}
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
			return rc.Flush()
		}
		emit := func(v any) error {
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			return write(StreamLine{Event: b})
		}
		out, err := h(r, emit)
		if err != nil {
			l := StreamLine{Error: &struct {
				Code    reasons.Code `json:"code"`
				Message string       `json:"message"`
			}{Code: reasons.CodeOf(err), Message: err.Error()}}
			if l.Error.Code == "" {
				l.Error.Code = reasons.Internal
			}
			write(l)
			return
		}
		b, err := json.Marshal(out)
		if err != nil {
			return
		}
		write(StreamLine{Result: b})
	})
}

// DoStream sends a request to a streamed path: onEvent gets each event as it arrives, and
// the result is decoded into out.
func (c *Client) DoStream(ctx context.Context, method, path string, in any, onEvent func(json.RawMessage) error, out any) error {
	req, err := c.request(ctx, method, path, in)
	if err != nil {
		return err
	}
	// A streamed answer may take as long as the run it reports on; ctx bounds it.
	hc := *c.hc
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return c.sendError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var eb ErrorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			return &RemoteError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
		}
		return &RemoteError{Status: resp.StatusCode, Code: reasons.Internal, Message: fmt.Sprintf("anetd answered %s", resp.Status)}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var l StreamLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		switch {
		case l.Error != nil:
			return &RemoteError{Status: http.StatusOK, Code: l.Error.Code, Message: l.Error.Message}
		case l.Result != nil:
			if out == nil {
				return nil
			}
			return json.Unmarshal(l.Result, out)
		case l.Event != nil && onEvent != nil:
			if err := onEvent(l.Event); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	return fmt.Errorf("read answer: anetd ended the answer without a result")
}
