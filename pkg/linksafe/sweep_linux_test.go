package linksafe

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSweepRunRoot: a run dir left by a killed launcher is swept; a live run's is not.
func TestSweepRunRoot(t *testing.T) {
	root := t.TempDir()
	live, stale := filepath.Join(root, "live"), filepath.Join(root, "stale")
	for _, d := range []string{filepath.Join(live, "home"), filepath.Join(stale, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := LockRunDir(live)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	// The stale dir was locked by a launcher that is gone: its lock went with it.
	gone, err := LockRunDir(stale)
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	removed, err := SweepRunRoot(root, 0)
	if err != nil || len(removed) != 1 || removed[0] != stale {
		t.Fatalf("SweepRunRoot = %v, %v; want only %s", removed, err, stale)
	}
	if _, err := os.Stat(filepath.Join(live, "home")); err != nil {
		t.Fatalf("live run dir after sweep: %v", err)
	}
}
