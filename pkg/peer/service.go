package peer

import (
	"anet.dev/anet/pkg/peeraddr"
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/peer/admission"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// Options configure a Service. Zero values take the defaults.
type Options struct {
	Identity KeyHolder
	Store    *store.Store
	Engine   Engine           // nil: tasks wait in the inbox
	Rates    Rates            // zero fields: DefaultRates
	Limits   admission.Limits // zero fields: admission.DefaultLimits
	// Quota bounds strangers' unanswered tasks and sets the free-space floor; nil takes the
	// defaults of the configuration (pkg/limits).
	Quota   *Quota
	Window  Window
	Backoff Backoff
	Now     func() time.Time
	Log     *slog.Logger
	// DiskFree reports the free bytes where the store lives; nil asks the store.
	DiskFree func() (int64, error)
	// Observer hears what intake admits and turns away and every refusal sent (the node's
	// metrics); nil hears nothing.
	Observer Observer
}

// Service is the node's peer side: the listener and its store-backed intake, the outbox
// and its delivery loop, and the Responder the engine and the operator answer through.
type Service struct {
	o       Options
	client  *Client
	server  *Server
	classes *classes
	quota   Quota
	disk    *diskGauge
	kick    chan struct{}
	// strangerLane admits one stranger's message at a time to the store.
	strangerLane chan struct{}

	mu       sync.Mutex // guards addr
	addr     net.Addr
	loopDone chan struct{}
	tasks    sync.WaitGroup // engine calls in flight
	ctx      context.Context
	cancel   context.CancelFunc
}

// New checks o and prepares the service; nothing listens or runs until Listen and Start.
func New(o Options) (*Service, error) {
	if o.Identity == nil || o.Store == nil {
		return nil, errors.New("peer service: Identity and Store are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Backoff.Base <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Quota == nil {
		o.Quota = &Quota{PerStranger: limits.StrangerPendingBytes, Strangers: limits.StrangersPendingBytes, DiskFreeMin: limits.DiskFreeMinBytes}
	}
	if o.DiskFree == nil {
		o.DiskFree = o.Store.FreeBytes
	}
	if o.Observer == nil {
		o.Observer = noObserver{}
	}
	s := &Service{o: o, kick: make(chan struct{}, 1), quota: *o.Quota, strangerLane: make(chan struct{}, 1),
		classes: newClasses(o.Store, o.Now, o.Log), disk: &diskGauge{read: o.DiskFree, now: o.Now}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	c, err := NewClient(o.Identity)
	if err != nil {
		return nil, err
	}
	s.client = c
	srv, err := NewServer(ServerOptions{Identity: o.Identity, Intake: intake{s}, Classes: s.classes, Rates: o.Rates, Limits: o.Limits,
		Window: o.Window, Now: o.Now, Log: o.Log, Observer: o.Observer})
	if err != nil {
		return nil, err
	}
	s.server = srv
	// A restart gives nobody a fresh burst: the buckets start from what was accepted.
	since := o.Now().Add(-srv.rate.r.restoreWindow())
	stamps, err := o.Store.RecentIncoming(s.ctx, since)
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("peer service: restore rate limits: %w", err)
	}
	srv.rate.restore(stamps, s.classes.Class)
	return s, nil
}

// PeersChanged tells the listener that the peers table or the trust list changed, so the
// next connection is classed by the new tables.
func (s *Service) PeersChanged() { s.classes.Refresh() }

// Listen binds addr (host:port; port 0 picks one) and serves peers on it.
func (s *Service) Listen(addr string) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("peer listener %s: %w; change `listen` in the config or stop what uses the port", addr, err)
	}
	s.mu.Lock()
	s.addr = l.Addr()
	s.mu.Unlock()
	go func() {
		if err := s.server.Serve(l); err != nil {
			s.o.Log.Error("peer listener stopped", "err", err)
		}
	}()
	return l.Addr(), nil
}

// Addr is the bound listener address, or nil when not listening.
func (s *Service) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start runs the outbox delivery loop and hands tasks still new to the engine.
func (s *Service) Start() {
	s.loopDone = make(chan struct{})
	go func() {
		defer close(s.loopDone)
		s.deliverLoop(s.ctx)
	}()
	if s.o.Engine == nil {
		return
	}
	pending, err := s.o.Store.Inbox(s.ctx, store.InboxOptions{State: store.StateNew})
	if err != nil {
		s.o.Log.Error("read inbox for the engine", "err", err)
		return
	}
	for _, it := range pending {
		s.toEngine(it)
	}
}

// Close stops the listener, the delivery loop and waits for engine calls to return.
func (s *Service) Close() {
	s.server.Close()
	s.cancel()
	if s.loopDone != nil {
		<-s.loopDone
	}
	s.tasks.Wait()
}

func (s *Service) toEngine(it store.Interaction) {
	if s.o.Engine == nil {
		return
	}
	trusted, err := s.o.Store.Trusted(s.ctx, it.Peer)
	if err != nil {
		s.o.Log.Error("engine: trust lookup", "err", err)
		return
	}
	t := Task{Peer: it.Peer, Interaction: it.ID, Text: it.Text, Sent: it.SentAt, Received: it.CreatedAt, Trusted: trusted}
	s.tasks.Add(1)
	go func() {
		defer s.tasks.Done()
		s.o.Engine.HandleTask(s.ctx, t, s)
	}()
}

// newID returns a prefix and 26 characters of lower-case base32: 128 random bits.
func newID(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b)
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// ValidAddr checks a peer address under the one rule of pkg/peeraddr: host:port with an IP
// address or a full host name, and a port from 1 to 65535; the error carries bad_peer_addr.
func ValidAddr(addr string) error { return peeraddr.Check("addr", addr) }

// InputError is a caller mistake in Send, Reply, Refuse or Answer; the text names the field.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func badInput(err error) error { return &InputError{Err: err} }

// ErrUnknownPeer is returned by Send for an aid that is not in the peers table.
var ErrUnknownPeer = errors.New("unknown peer")

// Send queues a task for peer to and returns its interaction; delivery happens in the
// background with retries.
func (s *Service) Send(ctx context.Context, to, text string) (store.Interaction, error) {
	if err := identity.ValidAID(to); err != nil {
		return store.Interaction{}, badInput(fmt.Errorf("to: %w", err))
	}
	if _, ok, err := s.o.Store.PeerAddr(ctx, to); err != nil {
		return store.Interaction{}, err
	} else if !ok {
		return store.Interaction{}, badInput(fmt.Errorf("to: %w %s; add it first with `anet peer add AID ADDR`", ErrUnknownPeer, to))
	}
	if err := checkText(text); err != nil {
		return store.Interaction{}, err
	}
	it, err := s.o.Store.Queue(ctx, s.o.Identity, store.Outgoing{Type: string(TypeTask), MsgID: newID("m-"), Peer: to, Interaction: newID("ix-"), Text: text})
	if err != nil {
		return store.Interaction{}, fmt.Errorf("send task: %w", err)
	}
	s.Kick()
	return it, nil
}

func checkText(text string) error {
	if text == "" {
		return badInput(errors.New("text: must not be empty"))
	}
	if len(text) > MaxText {
		return badInput(&TooLargeError{Field: "text", Size: len(text), Limit: MaxText})
	}
	if !utf8.ValidString(text) {
		// Replacing the bad bytes would change what the operator wrote without a word.
		return badInput(errors.New("text: is not valid UTF-8; send UTF-8 text"))
	}
	return nil
}

// Reply answers an inbound task (Responder).
func (s *Service) Reply(ctx context.Context, peer, interaction, text string) error {
	if err := checkText(text); err != nil {
		return err
	}
	_, err := s.answer(ctx, store.Outgoing{Type: string(TypeReply), Peer: peer, Interaction: interaction, Text: text})
	return err
}

// Refuse refuses an inbound task with a reason code (Responder).
func (s *Service) Refuse(ctx context.Context, peer, interaction string, code reasons.Code, until time.Time) error {
	if err := validCode(string(code)); err != nil {
		return badInput(err)
	}
	if (code == reasons.Budget) != !until.IsZero() {
		return badInput(errors.New("until: required for code budget and only there"))
	}
	if !until.IsZero() {
		// Checked here, not only when signing: a queued refusal that cannot be signed would
		// be retried for ever.
		if err := validYear("until", until); err != nil {
			return badInput(err)
		}
	}
	if _, err := s.answer(ctx, store.Outgoing{Type: string(TypeRefusal), Peer: peer, Interaction: interaction, Code: string(code), Until: until}); err != nil {
		return err
	}
	s.o.Observer.Refused(string(code))
	return nil
}

// Answer is Reply for callers that want the updated interaction (the control API).
func (s *Service) Answer(ctx context.Context, peer, interaction, text string) (store.Interaction, error) {
	if err := checkText(text); err != nil {
		return store.Interaction{}, err
	}
	return s.answer(ctx, store.Outgoing{Type: string(TypeReply), Peer: peer, Interaction: interaction, Text: text})
}

func (s *Service) answer(ctx context.Context, o store.Outgoing) (store.Interaction, error) {
	o.MsgID = newID("m-")
	if err := ValidID("interaction", o.Interaction); err != nil {
		return store.Interaction{}, badInput(err)
	}
	it, err := s.o.Store.Queue(ctx, s.o.Identity, o)
	if errors.Is(err, store.ErrUnknownInteraction) || errors.Is(err, store.ErrAlreadyAnswered) {
		return store.Interaction{}, badInput(fmt.Errorf("interaction: %s from %s: %w", o.Interaction, o.Peer, err))
	}
	if err != nil {
		return store.Interaction{}, fmt.Errorf("%s to %s: %w", o.Type, o.Interaction, err)
	}
	s.Kick()
	return it, nil
}

// Kick wakes the delivery loop.
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
