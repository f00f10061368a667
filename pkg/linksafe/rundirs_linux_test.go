package linksafe

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// S3: a run's dirs are made fresh and private, held for the run's life; a leftover dir of the
// same id is refused rather than reused; a planted link in the run's place is not followed;
// a dead launcher's unlocked run dir is swept on the way.
func TestMakeRunDirs(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	d, err := MakeRunDirs(root, "r1", true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Lock.Close()
	want := []string{filepath.Join(root, "r1", "home"), filepath.Join(root, "r1", "tmp"), filepath.Join(root, "r1", "work")}
	if d.Dir != filepath.Join(root, "r1") || len(d.Made) != 3 {
		t.Fatalf("MakeRunDirs = %+v, want %s and %v", d, filepath.Join(root, "r1"), want)
	}
	for i, p := range append([]string{d.Dir}, d.Made...) {
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want a 0700 dir", p, fi, err)
		}
		if i > 0 && p != want[i-1] {
			t.Errorf("made %s, want %s", p, want[i-1])
		}
	}
	if _, err := LockRunDir(d.Dir); err == nil {
		t.Error("a second lock on a live run's dir succeeded")
	}
	if _, err := MakeRunDirs(root, "r1", false); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("MakeRunDirs of a leftover id = %v, want EEXIST", err)
	}
	d2, err := MakeRunDirs(root, "r2", false)
	if err != nil || len(d2.Made) != 2 {
		t.Fatalf("MakeRunDirs without work = %+v, %v", d2, err)
	}
	d2.Lock.Close() // as a killed launcher's would be
	old := time.Now().Add(-time.Hour)
	os.Chtimes(d2.Dir, old, old)
	d3, err := MakeRunDirs(root, "r3", false)
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Lock.Close()
	if len(d3.Swept) != 1 || d3.Swept[0] != d2.Dir {
		t.Errorf("swept %v, want the dead run %s only (r1 is held)", d3.Swept, d2.Dir)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root, "r4")); err != nil {
		t.Fatal(err)
	}
	if _, err := MakeRunDirs(root, "r4", false); err == nil {
		t.Fatal("MakeRunDirs used a planted link as the run's dir")
	}
	if es, _ := os.ReadDir(elsewhere); len(es) != 0 {
		t.Errorf("made %v through the link", es)
	}
}
