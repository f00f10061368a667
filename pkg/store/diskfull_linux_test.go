package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// fullFS mounts a small tmpfs of its own for the test: a real file system that really fills,
// without touching the host's. Mounting needs root (CI runs as root); the product assumes
// nothing of the kind.
func fullFS(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Fatalf("this test mounts a 1 MiB tmpfs at %s to fill it and needs root (CI runs as root): %v", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes to path until the file system has no byte left, and returns how to free it.
func fill(t *testing.T, path string) (free func()) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("create filler: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v, want ENOSPC in the end", path, err)
			}
			break
		}
	}
	// The last partial block too: write byte by byte until nothing fits.
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			break
		}
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatalf("free the disk: %v", err)
		}
	}
}

// countingLog makes the default logger write to a buffer for the test.
func countingLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// N1, B5: a full disk under the data dir refuses each write with disk_full, naming the
// directory and the fix, logs that once (not per write) and once more when writes work again,
// and loses nothing that was stored: the chain verifies whole before and after.
func TestDiskFullRefusesWithItsCodeAndLosesNothing(t *testing.T) {
	dir := fullFS(t)
	logs := countingLog(t)
	s, err := Open(filepath.Join(dir, "anet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	signer := newSeedSigner(1)
	stored := int64(len(appendN(t, s, signer, 5)))
	free := fill(t, filepath.Join(dir, "filler"))

	// The WAL may still hold room for a few entries: append until the disk refuses, a
	// bounded number of times.
	ctx := context.Background()
	var full error
	for i := 0; i < 10000 && full == nil; i++ {
		_, full = s.Append(ctx, signer, EntryInput{Kind: "turn_completed", Details: map[string]any{"i": i, "pad": strings.Repeat("x", 512)}})
		if full == nil {
			stored++
		}
	}
	if full == nil {
		t.Fatal("10000 appends on a full 1 MiB file system all succeeded")
	}
	if code := reasons.CodeOf(full); code != reasons.DiskFull {
		t.Fatalf("Append on a full disk = %v (code %q), want code %s", full, code, reasons.DiskFull)
	}
	for _, want := range []string{dir, "is full", "nothing stored is lost", "free space there"} {
		if !strings.Contains(full.Error(), want) {
			t.Errorf("Append on a full disk = %q, want it to say %q", full, want)
		}
	}
	for range 3 {
		if _, err := s.Append(ctx, signer, EntryInput{Kind: "turn_completed"}); reasons.CodeOf(err) != reasons.DiskFull {
			t.Fatalf("Append while still full = %v, want %s", err, reasons.DiskFull)
		}
	}
	if err := s.SetMeta(ctx, "k", strings.Repeat("v", 64<<10)); reasons.CodeOf(err) != reasons.DiskFull {
		t.Fatalf("SetMeta while full = %v, want %s", err, reasons.DiskFull)
	}
	if n := strings.Count(logs.String(), "disk full"); n != 1 {
		t.Fatalf("the disk going full was logged %d times, want once:\n%s", n, logs)
	}
	res, err := s.Verify(ctx, signer.Public())
	if err != nil || res.Entries != stored {
		t.Fatalf("Verify while full = %d entries, %v; want all %d stored ones", res.Entries, err, stored)
	}

	free()
	if _, err := s.Append(ctx, signer, EntryInput{Kind: "turn_completed"}); err != nil {
		t.Fatalf("Append after freeing space = %v, want it to succeed", err)
	}
	stored++
	if n := strings.Count(logs.String(), "succeed again"); n != 1 {
		t.Fatalf("the recovery was logged %d times, want once:\n%s", n, logs)
	}
	if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != stored {
		t.Fatalf("Verify after recovery = %d entries, %v; want %d", res.Entries, err, stored)
	}
}

// N1, U2: a node that starts on a full disk (anetd opens the store and records that it
// started) is told disk_full with the directory, and the store it could not write to still
// holds everything once there is room.
func TestDiskFullAtStartSaysSo(t *testing.T) {
	dir := fullFS(t)
	path := filepath.Join(dir, "anet.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	signer := newSeedSigner(1)
	stored := int64(len(appendN(t, s, signer, 5)))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	free := fill(t, filepath.Join(dir, "filler"))

	ctx := context.Background()
	startErr := func() error {
		s, err := Open(path)
		if err != nil {
			return err
		}
		defer s.Close()
		for i := 0; i < 10000; i++ {
			if _, err := s.Append(ctx, signer, EntryInput{Kind: "node_started", Details: map[string]any{"pad": strings.Repeat("x", 512)}}); err != nil {
				return err
			}
			stored++
		}
		return nil
	}()
	if reasons.CodeOf(startErr) != reasons.DiskFull || !strings.Contains(startErr.Error(), dir) {
		t.Fatalf("open and append on a full disk = %v, want %s naming %s", startErr, reasons.DiskFull, dir)
	}
	free()
	s, err = Open(path)
	if err != nil {
		t.Fatalf("Open after freeing space = %v", err)
	}
	defer s.Close()
	if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != stored {
		t.Fatalf("Verify after a start on a full disk = %d entries, %v; want %d", res.Entries, err, stored)
	}
}

// N1, H1–H7: on a full disk a run's completion with its receipts is refused whole, with
// disk_full (Commit names it as the store's own writes do): no entry is left naming
// receipts that were not stored, nor receipts without their entry, and the chain verifies
// with every receipt it names, before and after room is made.
func TestDiskFullKeepsReceiptsWithTheirEntry(t *testing.T) {
	dir := fullFS(t)
	s, err := Open(filepath.Join(dir, "anet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	signer := newSeedSigner(1)
	set := sampleReceipts()
	// Receipts of some size, so that the disk fills within a few runs.
	for i := 0; i < 40; i++ {
		set.Tunnels = append(set.Tunnels, set.Tunnels[0])
	}
	body := encodeReceipts(t, set)
	stored := 0
	run := func(i int) error {
		_, err := putRun(ctx, s, signer, fmt.Sprintf("r-%d", i), goldenPeer, "ix-1", body)
		return err
	}
	if err := run(0); err != nil {
		t.Fatal(err)
	}
	stored++
	free := fill(t, filepath.Join(dir, "filler"))
	var full error
	for i := 1; i < 10000 && full == nil; i++ {
		if full = run(i); full == nil {
			stored++
		}
	}
	if full == nil {
		t.Fatal("10000 runs with receipts on a full 1 MiB file system all succeeded")
	}
	var de *DiskFullError
	if !isDiskFull(dir, full) && !errors.As(full, &de) {
		t.Fatalf("a run's completion on a full disk failed with %v, want the disk being full", full)
	}
	check := func(when string) {
		t.Helper()
		if n, r := countRows(t, s, "evidence"), countRows(t, s, "receipts"); n != stored || r != stored {
			t.Fatalf("%s: %d entries and %d receipts rows, want %d of each", when, n, r, stored)
		}
		if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != int64(stored) {
			t.Fatalf("Verify %s = %+v, %v; want %d entries with their receipts", when, res, err, stored)
		}
	}
	t.Logf("refused: %v", full)
	check("while full")
	free()
	if err := run(stored + 100); err != nil {
		t.Fatalf("a run's completion after freeing space = %v", err)
	}
	stored++
	check("after freeing space")
}
