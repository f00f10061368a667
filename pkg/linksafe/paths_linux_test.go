package linksafe

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// S3: run and work dirs are created, measured and deleted without ever
// following a link a run planted.

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestMkdirUnderRefusesSymlinkComponent(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "aid")); err != nil {
		t.Fatal(err)
	}
	_, _, err := MkdirUnder(root, "aid/inter", 0o700)
	if !errors.Is(err, ErrSymlink) {
		t.Fatalf("MkdirUnder(root, aid/inter) with aid -> %s = %v, want ErrSymlink", outside, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "inter")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat %s/inter = %v, want not created through the link", outside, err)
	}
}

func TestMkdirUnderCreates(t *testing.T) {
	root := t.TempDir()
	p, f, err := MkdirUnder(root, "a/b", 0o700)
	if err != nil {
		t.Fatalf("MkdirUnder = %v", err)
	}
	f.Close()
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("MkdirUnder made %s = %v, %v; want a 0700 dir", p, fi, err)
	}
	if _, _, err := MkdirUnder(root, "a/../x", 0o700); err == nil {
		t.Fatalf("MkdirUnder(a/../x) = nil, want an error")
	}
}

func TestRemovePathDoesNotFollowLinks(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	writeFile(t, secret, "keep me")
	outDir := filepath.Join(outside, "dir")
	if err := os.Mkdir(outDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outDir, "f"), "keep me too")

	run := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(filepath.Join(run, "work", "deep"), 0o700); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"work/file-link": secret, "work/dir-link": outDir, "work/deep/up": outside} {
		if err := os.Symlink(target, filepath.Join(run, link)); err != nil {
			t.Fatal(err)
		}
	}
	// A run can also make its own dirs unreadable.
	locked := filepath.Join(run, "work", "locked")
	if err := os.Mkdir(locked, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(locked, "x"), "x")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	// ... or readable but not writable, so their entries cannot be unlinked as they are.
	for _, d := range []string{"ro", "ro/ro-inner"} {
		p := filepath.Join(run, "work", d)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(p, "x"), "x")
	}
	for _, d := range []string{"ro/ro-inner", "ro"} {
		if err := os.Chmod(filepath.Join(run, "work", d), 0o500); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemovePath(run); err != nil {
		t.Fatalf("RemovePath = %v", err)
	}
	if _, err := os.Lstat(run); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after RemovePath, lstat run = %v, want gone", err)
	}
	for _, p := range []string{secret, filepath.Join(outDir, "f")} {
		if b, err := os.ReadFile(p); err != nil || len(b) == 0 {
			t.Fatalf("read %s after cleanup = %q, %v; want untouched (link was followed)", p, b, err)
		}
	}
}

func TestDiskUsageCountsHardLinksOnceAndSkipsLinks(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	base, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if base < 1<<20 {
		t.Fatalf("DiskUsage with a 1 MiB file = %d, want >= %d", base, 1<<20)
	}
	for i := 0; i < 5; i++ {
		if err := os.Link(big, filepath.Join(dir, "hl"+string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	// A link to a large host tree must not be walked.
	if err := os.Symlink("/usr", filepath.Join(dir, "usr")); err != nil {
		t.Fatal(err)
	}
	got, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got > base+64<<10 {
		t.Fatalf("DiskUsage after 5 hard links and a link to /usr = %d, want about %d", got, base)
	}
}

func TestRemoveExpired(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "victim"), "keep")
	for _, d := range []string{"aid1/i1", "aid1/i2", "aid2/i1"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "aid1", "i2", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "planted")); err != nil {
		t.Fatal(err)
	}
	// A run sets its work dir's mtime far into the future: it must still expire (ctime is used).
	future := time.Now().Add(100 * 365 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(root, "aid2", "i1"), future, future); err != nil {
		t.Fatal(err)
	}

	t.Run("within retention", func(t *testing.T) {
		// Only the link where an aid dir belongs goes at once: no run dir is ever a link.
		removed, err := RemoveExpired(root, time.Hour, time.Now())
		if err != nil || len(removed) != 1 || filepath.Base(removed[0]) != "planted" {
			t.Fatalf("RemoveExpired(now) = %v, %v; want only the planted link removed", removed, err)
		}
	})
	t.Run("after retention", func(t *testing.T) {
		removed, err := RemoveExpired(root, time.Hour, time.Now().Add(2*time.Hour))
		if err != nil {
			t.Fatalf("RemoveExpired = %v", err)
		}
		if len(removed) != 5 { // 3 interactions, 2 aids
			t.Fatalf("RemoveExpired removed %v, want 5 entries", removed)
		}
		ents, _ := os.ReadDir(root)
		if len(ents) != 0 {
			t.Fatalf("root after retention has %d entries, want 0", len(ents))
		}
		if b, err := os.ReadFile(filepath.Join(outside, "victim")); err != nil || string(b) != "keep" {
			t.Fatalf("victim outside = %q, %v; want untouched", b, err)
		}
	})
}
