// Package egress is the CONNECT egress proxy of a run's endpoint (H2–H8, R1): it accepts
// `CONNECT host:443` only for hosts on the operator's allow-list, resolves the name itself,
// refuses the tunnel if any address is special-purpose, dials only a verified address without
// any proxy, checks that the first TLS message names the requested host and does not use
// encrypted ClientHello, and then splices bytes both ways under the run's tunnel limits.
//
// Decisions worth knowing:
//   - Names are compared exactly (H4): "PyPI.org" is refused, not folded to lower case; one
//     trailing dot is folded ("pypi.org." is the same FQDN the resolver asks for anyway).
//   - Resolution and the address check happen before the 200, so those refusals reach the
//     agent as `anet:` answers. The ClientHello is read and checked after the 200, and only
//     a hello that passes makes the proxy connect upstream: a refused tunnel opens nothing
//     anywhere. Hello refusals end the tunnel with a TLS alert (access_denied or
//     decode_error) or a bare close; an upstream that cannot be reached ends it with
//     internal_error.
//   - A and AAAA are asked in parallel, each retried once; the checked addresses are dialled
//     Happy Eyeballs style (RFC 8305) within the same resolve-and-connect budget.
//   - Byte limits are per run: the last allowed byte passes; the tunnel whose next byte would
//     exceed the limit is closed, and later CONNECTs are refused.
//   - An agent hanging up before sending anything is not counted as a refusal.
//   - Every CONNECT leaves one receipt (pkg/receipt) when it ends: capped for the R1 limits,
//     failed when the name does not resolve or the upstream cannot be reached, refused for
//     any other rule, closed otherwise (the run's end included, with its code).
//
// Domain fronting inside TLS is not detected (H8): an allowed host is a path out for data.
package egress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
)

// Limits are one run's tunnel limits (R1). A zero field takes its default.
type Limits struct {
	OpenTunnels   int   // tunnels open at once
	TotalTunnels  int   // tunnels opened in the run
	SentBytes     int64 // bytes from the agent to upstreams, all tunnels together
	ReceivedBytes int64 // bytes from upstreams to the agent, all tunnels together
	HelloTimeout  time.Duration
	IdleTimeout   time.Duration // a tunnel with no byte either way for this long is closed
	// ConnectDelay is RFC 8305's Connection Attempt Delay: the next checked address is
	// tried this long after the previous attempt started (at once when it failed).
	ConnectDelay time.Duration
	// ConnectTimeout bounds one connection attempt; all of them together stay within
	// ResolveConnectTimeout.
	ConnectTimeout time.Duration
	// ResolveConnectTimeout bounds resolving the name plus connecting upstream, every
	// attempt included (the wait for the agent's hello in between is HelloTimeout's).
	ResolveConnectTimeout time.Duration
}

// DefaultLimits returns R1's limits: 16 open, 256 in all, 32 MiB sent, 512 MiB received.
func DefaultLimits() Limits {
	return Limits{
		OpenTunnels:   limits.OpenTunnels,
		TotalTunnels:  limits.Tunnels,
		SentBytes:     limits.TunnelSentBytes,
		ReceivedBytes: limits.TunnelReceivedBytes,
		HelloTimeout:  10 * time.Second,
		IdleTimeout:   5 * time.Minute,
		// RFC 8305 §8 recommends 250 ms.
		ConnectDelay:          250 * time.Millisecond,
		ConnectTimeout:        10 * time.Second,
		ResolveConnectTimeout: 15 * time.Second,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	return Limits{
		OpenTunnels:           cmp.Or(l.OpenTunnels, d.OpenTunnels),
		TotalTunnels:          cmp.Or(l.TotalTunnels, d.TotalTunnels),
		SentBytes:             cmp.Or(l.SentBytes, d.SentBytes),
		ReceivedBytes:         cmp.Or(l.ReceivedBytes, d.ReceivedBytes),
		HelloTimeout:          cmp.Or(l.HelloTimeout, d.HelloTimeout),
		IdleTimeout:           cmp.Or(l.IdleTimeout, d.IdleTimeout),
		ConnectDelay:          cmp.Or(l.ConnectDelay, d.ConnectDelay),
		ConnectTimeout:        cmp.Or(l.ConnectTimeout, d.ConnectTimeout),
		ResolveConnectTimeout: cmp.Or(l.ResolveConnectTimeout, d.ResolveConnectTimeout),
	}
}

func (l Limits) validate() error {
	switch {
	case l.OpenTunnels < 0:
		return errors.New("limits.open_tunnels is negative")
	case l.TotalTunnels < 0:
		return errors.New("limits.total_tunnels is negative")
	case l.SentBytes < 0:
		return errors.New("limits.sent_bytes is negative")
	case l.ReceivedBytes < 0:
		return errors.New("limits.received_bytes is negative")
	case l.HelloTimeout < 0:
		return errors.New("limits.hello_timeout is negative")
	case l.IdleTimeout < 0:
		return errors.New("limits.idle_timeout is negative")
	case l.ConnectDelay < 0:
		return errors.New("limits.connect_delay is negative")
	case l.ConnectTimeout < 0:
		return errors.New("limits.connect_timeout is negative")
	case l.ResolveConnectTimeout < 0:
		return errors.New("limits.resolve_connect_timeout is negative")
	}
	return nil
}

// Policy is one run's egress policy. Allow is expected to be validated already
// (ValidateAllowList); NewProxy checks it again.
type Policy struct {
	Allow  []string
	Limits Limits
}

// Resolver looks up a host name. The proxy always passes network "ip".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options are the proxy's seams.
type Options struct {
	// Resolver nil means a DNS stub resolver over /etc/resolv.conf's name servers (read at
	// each lookup) that asks for the FQDN only: /etc/hosts and search domains cannot change
	// the answer.
	Resolver Resolver
	// Logger nil means slog.Default().
	Logger *slog.Logger
}

// Usage is what a run did through its tunnels; anetd records it when the run ends.
type Usage struct {
	TunnelsOpened int                  `json:"tunnels_opened"`
	TunnelsOpen   int                  `json:"tunnels_open"`
	BytesSent     int64                `json:"bytes_sent"`
	BytesReceived int64                `json:"bytes_received"`
	Refusals      map[reasons.Code]int `json:"refusals,omitempty"`
}

// Proxy is one run's CONNECT handler.
type Proxy struct {
	allow    map[string]bool
	limits   Limits
	resolver Resolver
	log      *slog.Logger

	sent, received *budget
	// receipts are the run's CONNECTs, each kept when it ends (H4–H6, R1).
	receipts receipt.Log[receipt.Tunnel]
	// inflight counts the CONNECTs being served; Add only under mu while not closed.
	inflight sync.WaitGroup

	// mu guards the fields that follow.
	mu       sync.Mutex
	closed   bool
	admitted int // tunnels counted against TotalTunnels (opened or opening)
	active   int // tunnels counted against OpenTunnels
	opened   int // tunnels that got their 200
	tunnels  map[*tunnel]struct{}
	refusals map[reasons.Code]int
}

// NewProxy builds the CONNECT handler for one run.
func NewProxy(p Policy, o Options) (*Proxy, error) {
	if err := ValidateAllowList(p.Allow, nil); err != nil {
		return nil, fmt.Errorf("new egress proxy: %w", err)
	}
	if err := p.Limits.validate(); err != nil {
		return nil, fmt.Errorf("new egress proxy: %w", err)
	}
	lim := p.Limits.withDefaults()
	res := o.Resolver
	if res == nil {
		res = systemResolver()
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	allow := make(map[string]bool, len(p.Allow))
	for _, h := range p.Allow {
		allow[h] = true
	}
	return &Proxy{
		allow:    allow,
		limits:   lim,
		resolver: res,
		log:      log,
		sent:     newBudget(lim.SentBytes),
		received: newBudget(lim.ReceivedBytes),
		tunnels:  map[*tunnel]struct{}{},
		refusals: map[reasons.Code]int{},
	}, nil
}

// Usage returns a snapshot of the run's tunnel usage.
func (p *Proxy) Usage() Usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := Usage{
		TunnelsOpened: p.opened,
		TunnelsOpen:   len(p.tunnels),
		BytesSent:     p.sent.usedBytes(),
		BytesReceived: p.received.usedBytes(),
		Refusals:      make(map[reasons.Code]int, len(p.refusals)),
	}
	for c, n := range p.refusals {
		u.Refusals[c] = n
	}
	return u
}

// Close ends every tunnel and refuses new ones (the run is over). It returns once every
// CONNECT in flight has recorded its receipt, or after closeWait.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	ts := make([]*tunnel, 0, len(p.tunnels))
	for t := range p.tunnels {
		ts = append(ts, t)
	}
	p.mu.Unlock()
	for _, t := range ts {
		t.close()
	}
	done := make(chan struct{})
	go func() { p.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
		// A CONNECT still resolving when the run ended: its receipt comes too late for
		// the run's usage, and the log says so.
		p.log.Warn("egress close: CONNECTs still in flight; their receipts are not in the run's usage")
	}
}

// admit reserves a place for one tunnel against the run's limits.
func (p *Proxy) admit() *refusal {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return refuse(RunOver, "proxy closed")
	case p.active >= p.limits.OpenTunnels:
		return refuse(TunnelLimit, "%d tunnels open", p.active)
	case p.admitted >= p.limits.TotalTunnels:
		return refuse(TunnelLimit, "%d tunnels in all", p.admitted)
	case p.sent.available() <= 0:
		return refuse(BytesLimit, "sent bytes used up")
	case p.received.available() <= 0:
		return refuse(BytesLimit, "received bytes used up")
	}
	p.active++
	p.admitted++
	return nil
}

// unadmit gives back a place taken by admit for a tunnel that never opened.
func (p *Proxy) unadmit() {
	p.mu.Lock()
	p.active--
	p.admitted--
	p.mu.Unlock()
}

func (p *Proxy) countRefusal(c reasons.Code) {
	p.mu.Lock()
	p.refusals[c]++
	p.mu.Unlock()
}

// budget is a byte allowance shared by every tunnel of a run. A copy reserves the bytes it is
// about to move (bytes already queued in the kernel, so a reservation is never held while
// waiting for data) and settles what it moved, so the total never passes the limit however
// many tunnels copy at once.
type budget struct {
	mu       sync.Mutex
	cond     sync.Cond // signalled on settle
	limit    int64
	used     int64
	reserved int64
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.cond.L = &b.mu
	return b
}

func (b *budget) available() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit - b.used - b.reserved
}

func (b *budget) usedBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take reserves want bytes, or with partial as many as are left (at least one). It returns 0
// when the allowance cannot cover the request even after every other reservation settles;
// while reservations that could make room are outstanding, it waits for them.
func (b *budget) take(want int64, partial bool) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		avail := b.limit - b.used - b.reserved
		switch {
		case avail >= want:
			b.reserved += want
			return want
		case partial && avail > 0:
			b.reserved += avail
			return avail
		}
		// Not enough now. If settling every reservation cannot help, give up.
		left := b.limit - b.used
		if b.reserved == 0 || left <= 0 || (!partial && left < want) {
			return 0
		}
		b.cond.Wait()
	}
}

func (b *budget) settle(granted, moved int64) {
	b.mu.Lock()
	b.reserved -= granted
	b.used += moved
	b.mu.Unlock()
	b.cond.Broadcast()
}
