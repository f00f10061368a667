package peer

import (
	"sync"
	"time"
)

// RateLimit is a token bucket per peer: Burst messages at once, refilled at PerMinute.
type RateLimit struct {
	Burst     int
	PerMinute float64
}

// DefaultRateLimit lets a peer send 20 messages at once and 30 a minute after that.
var DefaultRateLimit = RateLimit{Burst: 20, PerMinute: 30}

// DefaultNodeRateLimit bounds all peers together: keys cost nothing, so a per-peer limit
// alone would not stop one party with many keys from filling the disk.
var DefaultNodeRateLimit = RateLimit{Burst: 2000, PerMinute: 1200}

// limiter holds one bucket per aid. mu guards buckets.
type limiter struct {
	rate RateLimit
	now  func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds the map; buckets that refilled completely carry no state and are dropped.
const maxBuckets = 10000

func newLimiter(r RateLimit, now func() time.Time) *limiter {
	return &limiter{rate: r, now: now, buckets: map[string]*bucket{}}
}

// allow takes one token from aid's bucket, or reports false when it is empty.
func (l *limiter) allow(aid string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[aid]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: float64(l.rate.Burst), last: now}
		l.buckets[aid] = b
	}
	l.refill(b, now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (l *limiter) refill(b *bucket, now time.Time) {
	if el := now.Sub(b.last); el > 0 {
		b.tokens += el.Minutes() * l.rate.PerMinute
		if b.tokens > float64(l.rate.Burst) {
			b.tokens = float64(l.rate.Burst)
		}
		b.last = now
	}
}

func (l *limiter) prune(now time.Time) {
	for k, b := range l.buckets {
		l.refill(b, now)
		if b.tokens >= float64(l.rate.Burst) {
			delete(l.buckets, k)
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
