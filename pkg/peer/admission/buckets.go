package admission

import "time"

// Rate is a token bucket: Burst at once, refilled at PerMinute.
type Rate struct {
	Burst     int
	PerMinute float64
}

// RefillTime is how long an empty bucket takes to fill: the longest a taken token matters.
func (r Rate) RefillTime() time.Duration {
	if r.PerMinute <= 0 {
		return 0
	}
	return time.Duration(float64(r.Burst) / r.PerMinute * float64(time.Minute))
}

// Buckets holds one token bucket per key, all at the same Rate. It is not safe for concurrent
// use: its owner locks. The map is bounded: at MaxKeys, buckets that refilled completely (they
// carry no state) are dropped; if every bucket still holds state, new keys share one overflow
// bucket, so a flood of new keys can neither grow memory nor reset a drained bucket.
type Buckets struct {
	rate Rate
	max  int
	m    map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// overflowKey is the bucket new keys share when the map is full of live buckets.
const overflowKey = "\x00overflow"

// DefaultMaxKeys bounds a Buckets map when NewBuckets is given 0.
const DefaultMaxKeys = 10000

// NewBuckets returns an empty set of buckets; maxKeys 0 means DefaultMaxKeys.
func NewBuckets(r Rate, maxKeys int) *Buckets {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Buckets{rate: r, max: maxKeys, m: map[string]*bucket{}}
}

// Len is the number of keys held (for tests of the bound).
func (b *Buckets) Len() int { return len(b.m) }

// get returns key's bucket refilled to now, creating a full one.
func (b *Buckets) get(key string, now time.Time) *bucket {
	bk, ok := b.m[key]
	if !ok {
		if len(b.m) >= b.max {
			b.prune(now)
		}
		if len(b.m) >= b.max {
			key = overflowKey
			if bk, ok = b.m[key]; ok {
				b.refill(bk, now)
				return bk
			}
		}
		bk = &bucket{tokens: float64(b.rate.Burst), last: now}
		b.m[key] = bk
	}
	b.refill(bk, now)
	return bk
}

// Has reports whether key has a token now (without taking it).
func (b *Buckets) Has(key string, now time.Time) bool { return b.get(key, now).tokens >= 1 }

// Take takes a token from key; a bucket never goes below zero.
func (b *Buckets) Take(key string, now time.Time) {
	bk := b.get(key, now)
	bk.tokens = max(bk.tokens-1, 0)
}

// Allow takes a token when there is one and reports whether there was.
func (b *Buckets) Allow(key string, now time.Time) bool {
	bk := b.get(key, now)
	if bk.tokens < 1 {
		return false
	}
	bk.tokens--
	return true
}

func (b *Buckets) refill(bk *bucket, now time.Time) {
	if el := now.Sub(bk.last); el > 0 {
		bk.tokens = min(bk.tokens+el.Minutes()*b.rate.PerMinute, float64(b.rate.Burst))
		bk.last = now
	}
}

func (b *Buckets) prune(now time.Time) {
	for k, bk := range b.m {
		b.refill(bk, now)
		if bk.tokens >= float64(b.rate.Burst) {
			delete(b.m, k)
		}
	}
}
