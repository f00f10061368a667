package sandbox

import (
	"context"
	"sync"
	"time"

	"anet.dev/anet/pkg/limits"
)

// ProbeTTL is how long a passing probe is trusted (S7).
const ProbeTTL = limits.ProbeTTL

// ProbeCache keeps passing probe results per configuration hash. Failures are not cached: an
// operator who fixes the host (installs bwrap, the AppArmor profile) sees it on the next try.
type ProbeCache struct {
	// TTL defaults to ProbeTTL; Now to time.Now.
	TTL time.Duration
	Now func() time.Time
	// Dir, when set, keeps passing results on disk too, for the next process (probedisk.go).
	Dir string
	// Stamp identifies the binaries and host a result on disk was taken with (FileStamp).
	Stamp string

	mu      sync.Mutex // guards entries; held across a probe so one runs at a time
	entries map[string]ProbeResult
}

// Get returns a cached passing result for hash younger than TTL, or runs probe and caches
// it when it passes. One probe runs at a time.
func (c *ProbeCache) Get(ctx context.Context, hash string, probe func(context.Context) (ProbeResult, error)) (ProbeResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.cached(hash); ok {
		return r, nil
	}
	r, err := probe(ctx)
	if err != nil {
		return r, err
	}
	return c.record(hash, r), nil
}

// Cached returns the passing result for hash younger than TTL, from memory or disk, marked
// Cached, or false.
func (c *ProbeCache) Cached(hash string) (ProbeResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cached(hash)
}

// Record keeps r, a probe of the configuration hash taken outside Get (the probe folded into
// a run), when it passes, and forgets hash when it fails. It returns r as kept.
func (c *ProbeCache) Record(hash string, r ProbeResult) ProbeResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.record(hash, r)
}

func (c *ProbeCache) clock() (time.Time, time.Duration) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ttl := c.TTL
	if ttl == 0 {
		ttl = ProbeTTL
	}
	return now(), ttl
}

// cached is Cached with mu held.
func (c *ProbeCache) cached(hash string) (ProbeResult, bool) {
	now, ttl := c.clock()
	if r, ok := c.entries[hash]; ok && r.OK && now.Sub(r.At) < ttl {
		r.Cached = true
		return r, true
	}
	if r, ok := c.loadDisk(hash, now, ttl); ok {
		if c.entries == nil {
			c.entries = map[string]ProbeResult{}
		}
		c.entries[hash] = r
		r.Cached = true
		return r, true
	}
	return ProbeResult{}, false
}

// record is Record with mu held.
func (c *ProbeCache) record(hash string, r ProbeResult) ProbeResult {
	now, _ := c.clock()
	r.ConfigHash = hash
	if r.At.IsZero() {
		r.At = now
	}
	if r.OK {
		if c.entries == nil {
			c.entries = map[string]ProbeResult{}
		}
		c.entries[hash] = r
		_ = c.saveDisk(hash, r) // unwritable: the next process probes again
	} else {
		delete(c.entries, hash)
		c.dropDisk(hash)
	}
	return r
}

// Drop forgets every cached result, in memory and on disk: a run found the sandbox wanting (a
// backend's check before the turn failed), so the next probe, in this process or the next,
// must run afresh.
func (c *ProbeCache) Drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = nil
	c.dropAllDisk()
}
