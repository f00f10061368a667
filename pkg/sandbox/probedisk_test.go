package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// S7: a passing probe outlives the process on disk, for five minutes and only for the same
// configuration and binaries; a failing one is never kept and removes what was; a file that
// someone else could have written, or that claims what the node never wrote, is a miss.
func TestProbeCacheOnDiskS7(t *testing.T) {
	now := time.Now().Round(0)
	dir := filepath.Join(t.TempDir(), "probe")
	calls := 0
	pass := true
	probe := func(context.Context) (ProbeResult, error) {
		calls++
		if pass {
			return ProbeResult{OK: true}, nil // Get stamps it with the cache's clock
		}
		return ProbeResult{OK: false, Code: reasons.NetnsFailed}, nil
	}
	// Each step is a new process: a new cache over the same directory.
	get := func(name, hash, stamp string, at time.Time, wantCalls int, wantCached bool) {
		t.Helper()
		c := &ProbeCache{Dir: dir, Stamp: stamp, Now: func() time.Time { return at }}
		r, err := c.Get(context.Background(), hash, probe)
		if err != nil {
			t.Fatalf("%s: Get = %v", name, err)
		}
		if calls != wantCalls || r.Cached != wantCached {
			t.Fatalf("%s: probes = %d, cached = %v; want %d, %v", name, calls, r.Cached, wantCalls, wantCached)
		}
	}
	file := func() string {
		t.Helper()
		fs, _ := filepath.Glob(filepath.Join(dir, "probe-*.json"))
		if len(fs) != 1 {
			t.Fatalf("cache files %v, want one", fs)
		}
		return fs[0]
	}
	get("first process probes", "h1", "s1", now, 1, false)
	if fi, err := os.Stat(file()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	get("next process reuses it", "h1", "s1", now.Add(time.Minute), 1, true)
	get("another configuration probes", "h2", "s1", now, 2, false)
	os.Remove(filepath.Join(dir, "probe-"+diskKey("h2", "s1")[:32]+".json"))
	get("a replaced binary probes", "h1", "s2", now, 3, false)
	os.Remove(filepath.Join(dir, "probe-"+diskKey("h1", "s2")[:32]+".json"))
	get("five minutes later probes", "h1", "s1", now.Add(ProbeTTL), 4, false)
	get("within five minutes of that reuses", "h1", "s1", now.Add(ProbeTTL+time.Second), 4, true)

	f := file()
	good, _ := os.ReadFile(f)
	// The file holds the result probed at now+ProbeTTL; each case reads it a moment later,
	// when it would be reused untouched:
	later := now.Add(ProbeTTL + 2*time.Second)
	get("untouched, it is reused", "h1", "s1", later, calls, true)
	tampered := func(name string, change func()) {
		t.Helper()
		change()
		before := calls
		get(name, "h1", "s1", later, before+1, false)
		// The fresh probe wrote a good file again; put the known one back for the next case.
		os.Remove(f)
		if err := os.WriteFile(f, good, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rewrite := func(edit func(e *diskEntry)) func() {
		return func() {
			var e diskEntry
			json.Unmarshal(good, &e)
			edit(&e)
			b, _ := json.Marshal(e)
			os.WriteFile(f, b, 0o600)
		}
	}
	tampered("a file others may write", func() { os.Chmod(f, 0o644) })
	tampered("a symlink", func() {
		other := filepath.Join(t.TempDir(), "other.json")
		os.WriteFile(other, good, 0o600)
		os.Remove(f)
		os.Symlink(other, f)
	})
	tampered("a directory others may enter", func() { os.Chmod(dir, 0o755) })
	os.Chmod(dir, 0o700)
	tampered("a failing result", rewrite(func(e *diskEntry) { e.Result.OK = false }))
	tampered("another configuration's result", rewrite(func(e *diskEntry) { e.Result.ConfigHash = "h2" }))
	tampered("another key", rewrite(func(e *diskEntry) { e.Key = diskKey("h1", "s2") }))
	tampered("a result from the future", rewrite(func(e *diskEntry) { e.Result.At = later.Add(time.Hour) }))
	tampered("garbage", func() { os.WriteFile(f, []byte("{"), 0o600) })

	// A failing probe is not kept, and removes the passing result it contradicts.
	pass = false
	c := &ProbeCache{Dir: dir, Stamp: "s1", Now: func() time.Time { return now.Add(2 * ProbeTTL) }}
	if r, _ := c.Get(context.Background(), "h1", probe); r.OK {
		t.Fatal("failing probe reported OK")
	}
	if fs, _ := filepath.Glob(filepath.Join(dir, "probe-*.json")); len(fs) != 0 {
		t.Fatalf("cache files after a failing probe: %v, want none", fs)
	}
}
