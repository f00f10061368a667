package sandbox

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// TestProbeCache: a passing probe is reused for five minutes per configuration (S7); a
// failing one is not cached, and another configuration probes again.
func TestProbeCache(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := &ProbeCache{Now: func() time.Time { return now }}
	calls := 0
	pass := true
	probe := func(context.Context) (ProbeResult, error) {
		calls++
		if pass {
			return ProbeResult{OK: true}, nil
		}
		return ProbeResult{OK: false, Code: reasons.NetnsFailed}, nil
	}
	step := func(name, hash string, wantCalls int, wantCached bool) {
		t.Helper()
		r, err := c.Get(context.Background(), hash, probe)
		if err != nil {
			t.Fatalf("%s: Get = %v", name, err)
		}
		if calls != wantCalls || r.Cached != wantCached || r.ConfigHash != hash {
			t.Fatalf("%s: calls = %d, cached = %v, hash = %q; want %d, %v, %q", name, calls, r.Cached, r.ConfigHash, wantCalls, wantCached, hash)
		}
	}
	step("first", "h1", 1, false)
	now = now.Add(4*time.Minute + 59*time.Second)
	step("within 5 min", "h1", 1, true)
	step("other configuration", "h2", 2, false)
	now = now.Add(2 * time.Second)
	step("expired", "h1", 3, false)
	pass = false
	now = now.Add(10 * time.Minute)
	step("failing probe", "h1", 4, false)
	step("failure not cached", "h1", 5, false)
}

// TestProbeCacheRecord (S7): a result taken outside Get (the probe folded into a run) is kept
// like Get's when it passes, on disk too for the next process, and a failing one forgets the
// configuration in both places.
func TestProbeCacheRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "probe")
	now := time.Now().Round(0)
	c := &ProbeCache{Dir: dir, Stamp: "s", Now: func() time.Time { return now }}
	if _, ok := c.Cached("h"); ok {
		t.Fatal("Cached on an empty cache = true")
	}
	if r := c.Record("h", ProbeResult{OK: true}); r.ConfigHash != "h" || !r.At.Equal(now) {
		t.Fatalf("Record = %+v, want the hash and the cache's time stamped", r)
	}
	next := &ProbeCache{Dir: dir, Stamp: "s", Now: func() time.Time { return now }} // a new process
	if r, ok := next.Cached("h"); !ok || !r.OK || !r.Cached {
		t.Fatalf("Cached in the next process = %+v, %v; want the recorded pass", r, ok)
	}
	c.Record("h", ProbeResult{OK: false, Code: reasons.SeccompFailed})
	for _, cc := range []*ProbeCache{c, {Dir: dir, Stamp: "s", Now: func() time.Time { return now }}} {
		if _, ok := cc.Cached("h"); ok {
			t.Fatal("Cached after a failing Record = true, want the configuration forgotten")
		}
	}
}
