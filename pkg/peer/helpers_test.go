package peer

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/store"
)

// seedKey is a node key from a fixed seed, so golden values are stable.
type seedKey struct{ priv ed25519.PrivateKey }

func newSeedKey(first byte) seedKey { return seedKey{priv: testkit.SeedKey(first)} }

func (k seedKey) AID() string               { return identity.AIDFromPublicKey(k.Public()) }
func (k seedKey) Signer() crypto.Signer     { return k.priv }
func (k seedKey) Sign(msg []byte) []byte    { return ed25519.Sign(k.priv, msg) }
func (k seedKey) Public() ed25519.PublicKey { return k.priv.Public().(ed25519.PublicKey) }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// syncBuffer collects log output while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// clock is a settable clock for window and rate tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testNode is a Service over a real store, optionally listening on loopback.
type testNode struct {
	key   seedKey
	store *store.Store
	svc   *Service
	addr  string
}

func newTestNode(t testing.TB, seed byte, o Options) *testNode {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "anet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k := newSeedKey(seed)
	o.Identity, o.Store = k, st
	if o.Log == nil {
		o.Log = quietLog()
	}
	svc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return &testNode{key: k, store: st, svc: svc}
}

func (n *testNode) listen(t testing.TB) {
	t.Helper()
	a, err := n.svc.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.addr = a.String()
}

// dial connects to n as key.
func (n *testNode) dial(t testing.TB, key KeyHolder) *Conn {
	t.Helper()
	c, err := NewClient(key)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := c.Dial(context.Background(), n.addr, n.key.AID())
	if err != nil {
		t.Fatalf("Dial(%s) error = %v", n.addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func (n *testNode) inbox(t testing.TB) []store.Interaction {
	t.Helper()
	list, err := n.store.Inbox(context.Background(), store.InboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// task returns a signed task from key to n.
func task(t testing.TB, key KeyHolder, to, id, interaction, text string, sent time.Time) SignedMessage {
	t.Helper()
	sm, err := Sign(key, Message{Type: TypeTask, ID: id, From: key.AID(), To: to, Sent: sent, Interaction: interaction, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return sm
}

var waitLimit = 30 * time.Second
