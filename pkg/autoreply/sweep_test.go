package autoreply

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// S3: work dirs are deleted when their retention ends, in both roots; younger ones stay.
func TestSweepWork(t *testing.T) {
	dir := t.TempDir()
	roots := []string{filepath.Join(dir, "work-sandbox"), filepath.Join(dir, "work")}
	for _, r := range roots {
		if err := os.MkdirAll(filepath.Join(r, "peer", "ix-1"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(r, "peer", "ix-1", "f"), []byte("x"), 0o600)
	}
	log := slog.New(slog.DiscardHandler)
	if n := sweepWork(roots, 168*time.Hour, time.Now(), log); n != 0 {
		t.Fatalf("sweepWork within retention removed %d dirs, want 0", n)
	}
	// A week and a day later (ctime cannot be set back, so the clock moves forward).
	// Each root loses the interaction dir and the aid dir it leaves empty.
	if n := sweepWork(roots, 168*time.Hour, time.Now().Add(192*time.Hour), log); n != 4 {
		t.Fatalf("sweepWork past retention removed %d dirs, want 4", n)
	}
	for _, r := range roots {
		if _, err := os.Stat(filepath.Join(r, "peer", "ix-1")); !os.IsNotExist(err) {
			t.Fatalf("%s/peer/ix-1 still there after its retention: %v", r, err)
		}
	}
}
