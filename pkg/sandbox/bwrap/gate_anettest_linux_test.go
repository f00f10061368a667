//go:build anettest

package bwrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
)

// TestLauncherFoldedProbeFails (S7, P2, F2): weakened (a test build only), the daemon's
// launcher on a cold cache returns the probe's reason from Start and the agent never runs.
func TestLauncherFoldedProbeFails(t *testing.T) {
	newHost(t)
	t.Setenv(bwrap.UnsafeWeakenEnv, "net")
	l, err := launch.New(launch.Options{Backend: bwrap.Name, Self: testharness.Bin(t, "anet-sandboxd")})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// The marker names the run's processes: the file is looked for once none is left.
	marker := "anet-fold-" + uniqueSleep()
	_, err = l.Start(context.Background(), foldSpec(t, "weak", work, marker), sandbox.Stdio{})
	if sandbox.CodeOf(err) != reasons.NetnsFailed {
		t.Fatalf("weakened Start = %v, want %s", err, reasons.NetnsFailed)
	}
	testkit.WaitWithin(t, "the refused run's processes gone", 30*time.Second, func() bool { return !markerAlive(marker) })
	if _, err := os.Lstat(filepath.Join(work, "w", "ran-weak")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused run's agent ran: lstat = %v", err)
	}
	if res, err := l.Probe(context.Background()); err != nil || res.OK || res.Cached {
		t.Fatalf("Probe after a refused folded run = %+v, %v; want a fresh failing probe (nothing kept)", res, err)
	}
}
