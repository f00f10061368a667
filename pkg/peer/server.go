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
	"syscall"
	"time"

	"anet.dev/anet/pkg/peer/admission"
	"anet.dev/anet/pkg/reasons"
)

// Origin is where an authenticated message came from.
type Origin struct {
	Addr   net.Addr         // the connection's remote address
	Source admission.Source // its address as admission counts it
	Class  admission.Class  // what the operator's tables say about the sender's key
}

// Intake stores a message that passed every transport check (TLS identity, encoding,
// signature, sender, recipient, window, rate) and says how to answer it.
type Intake interface {
	Accept(ctx context.Context, m SignedMessage, from Origin) Ack
}

// ServerOptions configure a Server. Zero values take the defaults.
type ServerOptions struct {
	Identity KeyHolder
	Intake   Intake
	// Classes says which keys are known or trusted and which sources are vouched; nil
	// treats everyone as a stranger.
	Classes Classifier
	Rates   Rates            // zero fields: DefaultRates
	Limits  admission.Limits // zero fields: admission.DefaultLimits
	Window  Window           // DefaultWindow when zero
	Now     func() time.Time
	Log     *slog.Logger
	// Observer hears what is turned away (the node's metrics); nil hears nothing.
	Observer Observer
}

// Time limits of an authenticated connection: a frame once its header arrived, an idle
// connection between frames, and writing an ack. The handshake's limit is admission's.
const (
	frameTimeout = 30 * time.Second
	idleTimeout  = 2 * time.Minute
	writeTimeout = 30 * time.Second
)

// sweepEvery is how often handshakes past their deadline and idle strangers under pressure
// are closed.
const sweepEvery = 250 * time.Millisecond

// Server accepts peer connections: admission by source, mutual TLS 1.3, admission by key
// and class, then frames of signed messages, each answered by one ack.
type Server struct {
	o     ServerOptions
	tls   *tls.Config
	table *admission.Table
	rate  *msgLimiter
	away  *turnAways
	self  string

	mu     sync.Mutex // guards ls, conns, closed
	ls     []net.Listener
	conns  map[admission.ID]*trackedConn
	closed bool
	wg     sync.WaitGroup
	done   chan struct{}
}

// NewServer checks o, makes the server's certificate and starts the sweeper.
func NewServer(o ServerOptions) (*Server, error) {
	if o.Identity == nil || o.Intake == nil {
		return nil, errors.New("peer server: Identity and Intake are required")
	}
	if o.Classes == nil {
		o.Classes = strangers{}
	}
	if o.Window.Past <= 0 {
		o.Window = DefaultWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Observer == nil {
		o.Observer = noObserver{}
	}
	cert, err := certificate(o.Identity)
	if err != nil {
		return nil, err
	}
	s := &Server{
		o: o, tls: serverConfig(cert), table: admission.NewTable(o.Limits), rate: newMsgLimiter(o.Rates),
		away: newTurnAways(o.Log, o.Observer, o.Now()), self: o.Identity.AID(), conns: map[admission.ID]*trackedConn{}, done: make(chan struct{}),
	}
	s.wg.Add(1)
	go s.sweep()
	return s, nil
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
			if retryableAccept(err) {
				s.o.Log.Warn("peer listener: accept failed; retrying", "err", err)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return fmt.Errorf("peer listener: %w", err)
		}
		s.admit(c)
	}
}

// retryableAccept: errors after which the listener is still good. Running out of
// descriptors under a flood must slow the listener down, not stop it.
func retryableAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// admit is the layer before TLS: one table decision, no byte read. A connection turned
// away is reset (no TIME_WAIT left behind for an attacker's churn) and counted.
func (s *Server) admit(c net.Conn) {
	src := admission.SourceOf(c.RemoteAddr())
	id, limit, v := s.table.Arrive(src, s.o.Classes.Vouched(src), s.o.Now())
	s.evict(v.Evict)
	if !v.Admit {
		s.away.conn(v.Reason, src, Unauthenticated)
		reset(c)
		return
	}
	tc := &trackedConn{Conn: c, id: id, src: src, table: s.table}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.table.Leave(id)
		c.Close()
		return
	}
	s.conns[id] = tc
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer s.untrack(tc)
		s.serveConn(tc, limit)
	}()
}

// reset closes c with an RST rather than a FIN.
func reset(c net.Conn) {
	if t, ok := c.(*net.TCPConn); ok {
		t.SetLinger(0)
	}
	c.Close()
}

// evict closes connections admission chose to make room or found past a deadline.
func (s *Server) evict(list []admission.Eviction) {
	for _, e := range list {
		s.mu.Lock()
		tc := s.conns[e.ID]
		s.mu.Unlock()
		if tc == nil {
			continue
		}
		s.away.conn(e.Reason, tc.src, tc.className())
		tc.evicted.Store(true)
		if tc.authenticated.Load() {
			tc.Close()
		} else {
			reset(tc.Conn)
		}
	}
}

func (s *Server) untrack(tc *trackedConn) {
	tc.Close()
	s.table.Leave(tc.id)
	s.mu.Lock()
	delete(s.conns, tc.id)
	s.mu.Unlock()
}

// sweep closes what admission finds past its time, and writes the turned-away summary.
func (s *Server) sweep() {
	defer s.wg.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	last := s.o.Now()
	for {
		select {
		case <-s.done:
			s.away.flush(s.o.Now())
			return
		case <-t.C:
		}
		now := s.o.Now()
		s.evict(s.table.Sweep(now))
		if now.Sub(last) >= summaryEvery {
			s.away.flush(now)
			last = now
		}
	}
}

// Close stops the listeners, ends every connection and waits for their handlers.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	for _, l := range s.ls {
		l.Close()
	}
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) serveConn(tc *trackedConn, handshake time.Duration) {
	remote := tc.RemoteAddr()
	tlc := tls.Server(tc, s.tls)
	tc.SetDeadline(time.Now().Add(handshake))
	ctx, cancel := context.WithTimeout(context.Background(), handshake)
	err := tlc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		var ne net.Error
		switch {
		case tc.evicted.Load(): // counted where it was closed
		case errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded):
			s.away.conn(admission.HandshakeSlow, tc.src, Unauthenticated)
		default:
			s.away.conn(admission.HandshakeBad, tc.src, Unauthenticated)
			if s.away.detail() {
				s.o.Log.Info("peer handshake failed", "remote", remote.String(), "err", err)
			}
		}
		return
	}
	aid, err := PeerAID(rawOf(tlc.ConnectionState()))
	if err != nil { // VerifyConnection already refused this; kept as the second check
		s.o.Log.Warn("peer refused", "remote", remote.String(), "err", err)
		return
	}
	class := s.o.Classes.Class(aid)
	v := s.table.Authenticated(tc.id, aid, class, s.o.Now())
	s.evict(v.Evict)
	if !v.Admit {
		s.away.conn(v.Reason, tc.src, class.String())
		return
	}
	tc.class.Store(uint32(class))
	tc.authenticated.Store(true)
	s.o.Classes.Authenticated(tc.src, class)
	log := s.o.Log.With("peer", aid, "remote", remote.String())
	for {
		tc.SetDeadline(time.Now().Add(idleTimeout))
		n, err := readHeader(tlc)
		s.table.Busy(tc.id, true, s.o.Now())
		var big *FrameTooLargeError
		if errors.As(err, &big) {
			// Counted and detailed within the log budget like every other refusal (N1): a
			// stranger's key is free, so each oversized header must not buy a log line.
			s.away.msg(reasons.MessageTooLarge, tc.src, s.o.Classes.Class(aid))
			if s.away.detail() {
				log.Warn("peer message refused", "code", reasons.MessageTooLarge, "err", err)
			}
			s.writeAck(tlc, tc, refused("", reasons.MessageTooLarge, err.Error()))
			// Read (and drop) a bounded part of the body so the sender reads the ack
			// instead of a reset, then close: the stream cannot be resynchronised.
			tc.SetReadDeadline(time.Now().Add(2 * time.Second))
			io.CopyN(io.Discard, tlc, int64(min(n, 2*MaxFrame)))
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && s.away.detail() {
				log.Info("peer connection ended", "err", err)
			}
			return
		}
		tc.SetReadDeadline(time.Now().Add(frameTimeout))
		body := make([]byte, n)
		if _, err := io.ReadFull(tlc, body); err != nil {
			if s.away.detail() {
				log.Info("peer connection ended mid-frame", "err", err)
			}
			return
		}
		from := Origin{Addr: remote, Source: tc.src, Class: s.o.Classes.Class(aid)}
		ack := s.handle(aid, body, from)
		if ack.Status == StatusRefused {
			s.away.msg(ack.Code, tc.src, from.Class)
			if s.away.detail() {
				log.Warn("peer message refused", "msg_id", ack.ID, "code", ack.Code, "detail", ack.Detail)
			}
		}
		if !s.writeAck(tlc, tc, ack) {
			return
		}
		s.table.Busy(tc.id, false, s.o.Now())
	}
}

func (s *Server) writeAck(tlc *tls.Conn, raw net.Conn, a Ack) bool {
	raw.SetWriteDeadline(time.Now().Add(writeTimeout))
	return writeFrame(tlc, a.encode()) == nil
}

// handle checks one frame from the authenticated peer aid. The rate limit comes first, so
// a peer over its limit costs no signature check and no database work.
func (s *Server) handle(aid string, body []byte, from Origin) Ack {
	if ok, detail := s.rate.allow(aid, from.Class, from.Source, s.o.Now()); !ok {
		return refused("", CodeRateLimited, detail)
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
	a := s.o.Intake.Accept(ctx, sm, from)
	a.ID = sm.ID
	return a
}
