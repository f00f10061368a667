package peer

import (
	"fmt"
	"sync"
	"time"

	"anet.dev/anet/pkg/peer/admission"
	"anet.dev/anet/pkg/store"
)

// RateLimit is a token bucket: Burst messages at once, refilled at PerMinute.
type RateLimit = admission.Rate

// Rates are the message budgets (N1). Trusted and known peers each have their own bucket per
// key, apart from everything strangers share; a stranger's message must find a token in its
// key's bucket, its source's bucket and the bucket of all strangers together. Zero fields
// take DefaultRates.
type Rates struct {
	Trusted        RateLimit // per trusted key
	Known          RateLimit // per key in the peers table
	Stranger       RateLimit // per stranger key
	StrangerSource RateLimit // all stranger keys from one source (IPv4 address, IPv6 /64)
	Strangers      RateLimit // all strangers together
}

// DefaultRates: keys cost nothing, so strangers are bounded per key, per address and
// together; the peers the operator chose are bounded only per key.
var DefaultRates = Rates{
	Trusted:        RateLimit{Burst: 200, PerMinute: 600},
	Known:          RateLimit{Burst: 50, PerMinute: 120},
	Stranger:       RateLimit{Burst: 20, PerMinute: 30},
	StrangerSource: RateLimit{Burst: 200, PerMinute: 300},
	Strangers:      RateLimit{Burst: 2000, PerMinute: 1200},
}

func (r Rates) withDefaults() Rates {
	for _, f := range []struct{ v, d *RateLimit }{
		{&r.Trusted, &DefaultRates.Trusted}, {&r.Known, &DefaultRates.Known}, {&r.Stranger, &DefaultRates.Stranger},
		{&r.StrangerSource, &DefaultRates.StrangerSource}, {&r.Strangers, &DefaultRates.Strangers},
	} {
		if f.v.Burst <= 0 {
			*f.v = *f.d
		}
	}
	return r
}

// restoreWindow is how far back the store is read to rebuild the buckets: the longest any
// bucket takes to refill.
func (r Rates) restoreWindow() time.Duration {
	return max(r.Trusted.RefillTime(), r.Known.RefillTime(), r.Stranger.RefillTime(), r.StrangerSource.RefillTime(), r.Strangers.RefillTime())
}

// msgLimiter holds every message bucket under one mutex, so a message takes its tokens from
// all the buckets that apply or from none. mu guards the buckets.
type msgLimiter struct {
	r Rates

	mu                                          sync.Mutex
	trusted, known, stranger, source, strangers *admission.Buckets
}

func newMsgLimiter(r Rates) *msgLimiter {
	r = r.withDefaults()
	return &msgLimiter{r: r,
		trusted: admission.NewBuckets(r.Trusted, 0), known: admission.NewBuckets(r.Known, 0),
		stranger: admission.NewBuckets(r.Stranger, 0), source: admission.NewBuckets(r.StrangerSource, 0),
		strangers: admission.NewBuckets(r.Strangers, 1),
	}
}

// check is one bucket a message needs a token from, and the words for its refusal.
type check struct {
	b      *admission.Buckets
	key    string
	detail func() string
}

func (l *msgLimiter) checks(aid string, class admission.Class, src admission.Source) []check {
	limit := func(what string, r RateLimit, whose string) func() string {
		return func() string {
			return fmt.Sprintf("%slimit: %d messages at once, %g a minute%s", what, r.Burst, r.PerMinute, whose)
		}
	}
	switch class {
	case admission.Trusted:
		return []check{{l.trusted, aid, limit("", l.r.Trusted, " (trusted peer)")}}
	case admission.Known:
		return []check{{l.known, aid, limit("", l.r.Known, " (known peer)")}}
	}
	return []check{
		{l.stranger, aid, limit("", l.r.Stranger, "")},
		{l.source, src.String(), limit("source ", l.r.StrangerSource, " from all strangers at "+src.String())},
		{l.strangers, "", limit("node-wide ", l.r.Strangers, " from all strangers")},
	}
}

// allow takes a token from every bucket that applies to a message, or from none; the
// refusal names the first bucket that was empty.
func (l *msgLimiter) allow(aid string, class admission.Class, src admission.Source, now time.Time) (bool, string) {
	cs := l.checks(aid, class, src)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cs {
		if !c.b.Has(c.key, now) {
			return false, c.detail()
		}
	}
	for _, c := range cs {
		c.b.Take(c.key, now)
	}
	return true, ""
}

// restore replays messages accepted before a restart, oldest first, so a restart gives no
// one a fresh burst: each took its tokens at the time it arrived, and the buckets have been
// refilling since.
func (l *msgLimiter) restore(stamps []store.IncomingStamp, classOf func(string) admission.Class) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range stamps {
		src, _ := admission.ParseSource(st.Src)
		for _, c := range l.checks(st.Peer, classOf(st.Peer), src) {
			c.b.Take(c.key, st.At)
		}
	}
}

// Window is how far a message's sent time may lie from the receiver's clock. Senders sign
// every delivery attempt afresh, so a retried message is always recent; the window bounds
// how long a captured message could be replayed, and the stored message ids refuse it
// within the window.
type Window struct {
	Past   time.Duration
	Future time.Duration
}

// DefaultWindow accepts messages signed up to 10 minutes ago or 2 minutes ahead.
var DefaultWindow = Window{Past: 10 * time.Minute, Future: 2 * time.Minute}

// check reports whether sent is inside the window around now.
func (w Window) check(sent, now time.Time) bool {
	return !sent.Before(now.Add(-w.Past)) && !sent.After(now.Add(w.Future))
}
