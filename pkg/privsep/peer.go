package privsep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"anet.dev/anet/pkg/reasons"
)

// errEOF is what Recv returns when the other end has closed.
var errEOF = io.EOF

// Error is the error part of a response. Code comes from pkg/reasons.
type Error struct {
	Code    reasons.Code `json:"code"`
	Message string       `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// ReasonCode is the error's code (what sandbox.CodeOf reads from any error that carries one).
func (e *Error) ReasonCode() reasons.Code { return e.Code }

// Request is what a handler receives.
type Request struct {
	Method string
	Body   json.RawMessage
	// Files are descriptors passed with the request; the handler owns them.
	Files []*os.File
}

// Decode unmarshals the body into v, strictly.
func (r *Request) Decode(v any) error {
	if len(r.Body) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &Error{Code: reasons.BadRequest, Message: fmt.Sprintf("%s: %v", r.Method, err)}
	}
	return nil
}

// Reply is a handler's answer: a body and optional descriptors to pass back.
type Reply struct {
	Body  any
	Files []*os.File
}

// Handler answers one request. Returning a *Error keeps its code; any other error is sent
// with code internal. A handler's ctx ends when the connection closes.
type Handler func(ctx context.Context, req *Request) (Reply, error)

// EventFunc receives events from the other side.
type EventFunc func(method string, body json.RawMessage)

// Peer runs request/response/event exchange over a Conn, in both directions.
type Peer struct {
	conn     *Conn
	handlers map[string]Handler
	onEvent  EventFunc
	log      *slog.Logger

	mu      sync.Mutex // guards the fields below
	nextID  uint64
	pending map[uint64]chan result
	closed  error

	inflight sync.WaitGroup
}

type result struct {
	msg   *Message
	files []*os.File
}

// NewPeer wraps c. handlers answer the other side's requests; onEvent may be nil.
func NewPeer(c *Conn, handlers map[string]Handler, onEvent EventFunc, log *slog.Logger) *Peer {
	if log == nil {
		log = slog.Default()
	}
	return &Peer{conn: c, handlers: handlers, onEvent: onEvent, log: log, pending: map[uint64]chan result{}}
}

// ErrClosed is returned by Call after the connection ended.
var ErrClosed = errors.New("privsep: connection closed")

// Run reads until the connection ends, dispatching requests to handlers (each in its own
// goroutine) and responses to waiting calls. When it returns, ctx passed to handlers is
// cancelled and Run has waited for every handler to finish: a helper's work ends before it
// exits. It returns nil on a clean EOF.
func (p *Peer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		p.inflight.Wait()
	}()
	go func() {
		<-ctx.Done()
		p.conn.Close()
	}()
	for {
		m, files, err := p.conn.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				err = nil
			}
			p.fail(ErrClosed)
			return err
		}
		switch m.Type {
		case TypeRequest:
			h := p.handlers[m.Method]
			p.inflight.Add(1)
			go func() {
				defer p.inflight.Done()
				p.serve(ctx, h, m, files)
			}()
		case TypeResponse:
			p.mu.Lock()
			ch := p.pending[m.ID]
			delete(p.pending, m.ID)
			p.mu.Unlock()
			if ch == nil {
				closeAll(files)
				p.log.Warn("privsep: response to an unknown request", "id", m.ID)
				continue
			}
			ch <- result{m, files}
		case TypeEvent:
			closeAll(files)
			if p.onEvent != nil {
				p.onEvent(m.Method, m.Body)
			}
		default:
			closeAll(files)
			p.log.Warn("privsep: message of unknown type", "type", m.Type)
		}
	}
}

func (p *Peer) serve(ctx context.Context, h Handler, m *Message, files []*os.File) {
	resp := &Message{ID: m.ID, Type: TypeResponse, Method: m.Method}
	var out []*os.File
	if h == nil {
		closeAll(files)
		resp.Error = &Error{Code: reasons.BadRequest, Message: fmt.Sprintf("unknown method %q", m.Method)}
	} else {
		reply, err := h(ctx, &Request{Method: m.Method, Body: m.Body, Files: files})
		if err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				resp.Error = pe
			} else {
				var re *reasons.Error
				if errors.As(err, &re) {
					resp.Error = &Error{Code: re.Code, Message: re.Error()}
				} else {
					resp.Error = &Error{Code: reasons.Internal, Message: err.Error()}
				}
			}
		} else {
			if reply.Body != nil {
				b, err := json.Marshal(reply.Body)
				if err != nil {
					resp.Error = &Error{Code: reasons.Internal, Message: "encode reply: " + err.Error()}
				} else {
					resp.Body = b
				}
			}
			out = reply.Files
		}
	}
	err := p.conn.Send(resp, out...)
	if errors.Is(err, ErrTooLarge) {
		err = p.conn.Send(&Message{ID: m.ID, Type: TypeResponse, Method: m.Method,
			Error: &Error{Code: reasons.MessageTooLarge, Message: err.Error()}})
	}
	closeAll(out)
	if err != nil && ctx.Err() == nil {
		p.log.Warn("privsep: send response", "method", m.Method, "err", err)
	}
}

func (p *Peer) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed == nil {
		p.closed = err
	}
	for id, ch := range p.pending {
		close(ch)
		delete(p.pending, id)
	}
}

// Call sends a request and waits for its response, decoding the body into resp (which may
// be nil). Descriptors passed back are returned; the caller owns them.
func (p *Peer) Call(ctx context.Context, method string, req, resp any, files ...*os.File) ([]*os.File, error) {
	var body json.RawMessage
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("privsep encode %s: %w", method, err)
		}
		body = b
	}
	ch := make(chan result, 1)
	p.mu.Lock()
	if p.closed != nil {
		p.mu.Unlock()
		return nil, p.closed
	}
	p.nextID++
	id := p.nextID
	p.pending[id] = ch
	p.mu.Unlock()

	if err := p.conn.Send(&Message{ID: id, Type: TypeRequest, Method: method, Body: body}, files...); err != nil {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, ErrClosed
		}
		if r.msg.Error != nil {
			closeAll(r.files)
			return nil, r.msg.Error
		}
		if resp != nil && len(r.msg.Body) > 0 {
			if err := json.Unmarshal(r.msg.Body, resp); err != nil {
				closeAll(r.files)
				return nil, fmt.Errorf("privsep decode %s reply: %w", method, err)
			}
		}
		return r.files, nil
	case <-ctx.Done():
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Notify sends an event; there is no answer.
func (p *Peer) Notify(method string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("privsep encode %s: %w", method, err)
	}
	return p.conn.Send(&Message{Type: TypeEvent, Method: method, Body: b})
}

// Close ends the connection.
func (p *Peer) Close() error { return p.conn.Close() }
