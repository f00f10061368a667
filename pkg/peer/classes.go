package peer

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"anet.dev/anet/pkg/peer/admission"
	"anet.dev/anet/pkg/store"
)

// Classifier tells the listener what the operator's tables say about a key and a source.
type Classifier interface {
	// Class is the key's class: trusted (trust list), known (peers table) or stranger.
	Class(aid string) admission.Class
	// Vouched reports whether a source may use the handshake slots kept for peers.
	Vouched(src admission.Source) bool
	// Authenticated records that a key of class authenticated from src.
	Authenticated(src admission.Source, class admission.Class)
}

// Figures of the store-backed classifier.
const (
	// classesRefresh is how old the cached tables may get; Refresh reloads at once (the
	// node calls it whenever the operator changes either table).
	classesRefresh = 2 * time.Second
	// vouchFor is how long a source stays vouched after a known or trusted key
	// authenticated from it.
	vouchFor = 24 * time.Hour
	// maxVouched bounds the remembered sources; the oldest is forgotten first.
	maxVouched = 4096
)

// classes is the Classifier over the store's peers table and trust list, cached. A source is
// vouched when it is the literal IP of an address in the peers table, or when a known or
// trusted key authenticated from it within vouchFor. mu guards the fields below it.
type classes struct {
	st  *store.Store
	now func() time.Time
	log *slog.Logger

	mu     sync.Mutex
	loaded time.Time
	class  map[string]admission.Class
	listed map[admission.Source]bool
	recent map[admission.Source]time.Time
}

func newClasses(st *store.Store, now func() time.Time, log *slog.Logger) *classes {
	return &classes{st: st, now: now, log: log, recent: map[admission.Source]time.Time{}}
}

// Refresh makes the next lookup reload the tables.
func (c *classes) Refresh() {
	c.mu.Lock()
	c.loaded = time.Time{}
	c.mu.Unlock()
}

// fresh reloads the tables when the cache is stale. Caller holds mu. A failed reload keeps
// the previous tables (an operator's peer does not become a stranger because of one error).
func (c *classes) fresh() {
	now := c.now()
	if c.class != nil && now.Sub(c.loaded) < classesRefresh && !c.loaded.IsZero() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	peers, err := c.st.Peers(ctx)
	if err == nil {
		var trust []store.TrustEntry
		if trust, err = c.st.TrustList(ctx); err == nil {
			class := make(map[string]admission.Class, len(peers)+len(trust))
			listed := map[admission.Source]bool{}
			for _, p := range peers {
				class[p.AID] = admission.Known
				if host, _, err := net.SplitHostPort(p.Addr); err == nil {
					if ip, err := netip.ParseAddr(host); err == nil {
						listed[admission.SourceOfIP(ip)] = true
					}
				}
			}
			for _, t := range trust {
				class[t.AID] = admission.Trusted
			}
			c.class, c.listed, c.loaded = class, listed, now
			return
		}
	}
	c.log.Error("peer classes: read peers and trust list", "err", err)
	if c.class == nil {
		c.class, c.listed = map[string]admission.Class{}, map[admission.Source]bool{}
	}
	c.loaded = now
}

func (c *classes) Class(aid string) admission.Class {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fresh()
	return c.class[aid]
}

func (c *classes) Vouched(src admission.Source) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fresh()
	if c.listed[src] {
		return true
	}
	at, ok := c.recent[src]
	return ok && c.now().Sub(at) < vouchFor
}

func (c *classes) Authenticated(src admission.Source, class admission.Class) {
	if class == admission.Stranger || !src.IsValid() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.recent[src]; !ok && len(c.recent) >= maxVouched {
		var oldest admission.Source
		var at time.Time
		for s, t := range c.recent {
			if at.IsZero() || t.Before(at) {
				oldest, at = s, t
			}
		}
		delete(c.recent, oldest)
	}
	c.recent[src] = now
}

// strangers is the Classifier of a server without a store: every key is a stranger.
type strangers struct{}

func (strangers) Class(string) admission.Class                    { return admission.Stranger }
func (strangers) Vouched(admission.Source) bool                   { return false }
func (strangers) Authenticated(admission.Source, admission.Class) {}
