package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// Intake stores a message that passed every transport check (TLS identity, encoding,
// signature, sender, recipient, window, rate) and says how to answer it.
type Intake interface {
	Accept(ctx context.Context, m SignedMessage, remote net.Addr) Ack
}

// ServerOptions configure a Server. Zero values take the defaults.
type ServerOptions struct {
	Identity KeyHolder
	Intake   Intake
	Rate     RateLimit // per peer; DefaultRateLimit when zero
	NodeRate RateLimit // all peers together; DefaultNodeRateLimit when zero
	Window   Window    // DefaultWindow when zero
	MaxConns int       // connections served at once; 256 when zero
	Now      func() time.Time
	Log      *slog.Logger
}

// Time limits of a connection: the handshake, a frame once its header arrived, an idle
// connection between frames, and writing an ack.
const (
	handshakeTimeout = 10 * time.Second
	frameTimeout     = 30 * time.Second
	idleTimeout      = 2 * time.Minute
	writeTimeout     = 30 * time.Second
)

// Server accepts peer connections: mutual TLS 1.3, then frames of signed messages, each
// answered by one ack.
type Server struct {
	o    ServerOptions
	tls  *tls.Config
	lim  *limiter // per peer
	all  *limiter // one bucket for every peer together
	sem  chan struct{}
	self string

	mu     sync.Mutex // guards ls, conns, closed
	ls     []net.Listener
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewServer checks o and makes the server's certificate.
func NewServer(o ServerOptions) (*Server, error) {
	if o.Identity == nil || o.Intake == nil {
		return nil, errors.New("peer server: Identity and Intake are required")
	}
	if o.Rate.Burst <= 0 {
		o.Rate = DefaultRateLimit
	}
	if o.NodeRate.Burst <= 0 {
		o.NodeRate = DefaultNodeRateLimit
	}
	if o.Window.Past <= 0 {
		o.Window = DefaultWindow
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 256
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	cert, err := certificate(o.Identity)
	if err != nil {
		return nil, err
	}
	return &Server{
		o: o, tls: serverConfig(cert), lim: newLimiter(o.Rate, o.Now), all: newLimiter(o.NodeRate, o.Now), sem: make(chan struct{}, o.MaxConns),
		self: o.Identity.AID(), conns: map[net.Conn]struct{}{},
	}, nil
}

// Serve accepts connections on l until Close. It returns nil after Close.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return nil
	}
	s.ls = append(s.ls, l)
	s.mu.Unlock()
	for {
		c, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return fmt.Errorf("peer listener: %w", err)
		}
		select {
		case s.sem <- struct{}{}:
		default:
			s.o.Log.Warn("peer connection refused", "reason", "too many connections", "remote", c.RemoteAddr().String())
			c.Close()
			continue
		}
		if !s.track(c) {
			<-s.sem
			c.Close()
			return nil
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.sem }()
			defer s.untrack(c)
			s.serveConn(c)
		}()
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Close stops the listeners, ends every connection and waits for their handlers.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, l := range s.ls {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) serveConn(raw net.Conn) {
	remote := raw.RemoteAddr()
	tc := tls.Server(raw, s.tls)
	raw.SetDeadline(time.Now().Add(handshakeTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		s.o.Log.Info("peer handshake failed", "remote", remote.String(), "err", err)
		return
	}
	aid, err := PeerAID(rawOf(tc.ConnectionState()))
	if err != nil { // VerifyConnection already refused this; kept as the second check
		s.o.Log.Warn("peer refused", "remote", remote.String(), "err", err)
		return
	}
	log := s.o.Log.With("peer", aid, "remote", remote.String())
	for {
		raw.SetDeadline(time.Now().Add(idleTimeout))
		n, err := readHeader(tc)
		var big *FrameTooLargeError
		if errors.As(err, &big) {
			log.Warn("peer message refused", "code", reasons.MessageTooLarge, "err", err)
			s.writeAck(tc, raw, refused("", reasons.MessageTooLarge, err.Error()))
			// Read (and drop) a bounded part of the body so the sender reads the ack
			// instead of a reset, then close: the stream cannot be resynchronised.
			raw.SetReadDeadline(time.Now().Add(2 * time.Second))
			io.CopyN(io.Discard, tc, int64(min(n, 2*MaxFrame)))
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				log.Info("peer connection ended", "err", err)
			}
			return
		}
		raw.SetReadDeadline(time.Now().Add(frameTimeout))
		body := make([]byte, n)
		if _, err := io.ReadFull(tc, body); err != nil {
			log.Info("peer connection ended mid-frame", "err", err)
			return
		}
		ack := s.handle(aid, body, remote)
		if ack.Status == StatusRefused {
			log.Warn("peer message refused", "msg_id", ack.ID, "code", ack.Code, "detail", ack.Detail)
		}
		if !s.writeAck(tc, raw, ack) {
			return
		}
	}
}

func (s *Server) writeAck(tc *tls.Conn, raw net.Conn, a Ack) bool {
	raw.SetWriteDeadline(time.Now().Add(writeTimeout))
	return writeFrame(tc, a.encode()) == nil
}

// handle checks one frame from the authenticated peer aid. The rate limit comes first, so
// a peer over its limit costs no signature check and no database work.
func (s *Server) handle(aid string, body []byte, remote net.Addr) Ack {
	if !s.lim.allow(aid) {
		return refused("", CodeRateLimited, fmt.Sprintf("limit: %d messages at once, %g a minute", s.o.Rate.Burst, s.o.Rate.PerMinute))
	}
	if !s.all.allow("") {
		return refused("", CodeRateLimited, fmt.Sprintf("node-wide limit: %d messages at once, %g a minute from all peers", s.o.NodeRate.Burst, s.o.NodeRate.PerMinute))
	}
	sm, err := Parse(body)
	var big *TooLargeError
	switch {
	case errors.As(err, &big):
		return refused(sm.ID, reasons.MessageTooLarge, err.Error())
	case errors.Is(err, ErrBadSignature):
		return refused(sm.ID, CodeBadSignature, "")
	case err != nil:
		return refused(sm.ID, CodeMalformed, err.Error())
	}
	if sm.From != aid {
		return refused(sm.ID, CodeSenderMismatch, fmt.Sprintf("from %s, connected as %s", sm.From, aid))
	}
	if sm.To != s.self {
		return refused(sm.ID, CodeWrongRecipient, fmt.Sprintf("to %s, this node is %s", sm.To, s.self))
	}
	if now := s.o.Now(); !s.o.Window.check(sm.Sent, now) {
		return refused(sm.ID, CodeReplayWindow, fmt.Sprintf("sent %s, receiver time %s, window -%s/+%s",
			formatTime(sm.Sent), formatTime(now), s.o.Window.Past, s.o.Window.Future))
	}
	ctx, cancel := context.WithTimeout(context.Background(), frameTimeout)
	defer cancel()
	a := s.o.Intake.Accept(ctx, sm, remote)
	a.ID = sm.ID
	return a
}
