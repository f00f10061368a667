package guestimage

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/u-root/u-root/pkg/cpio"
)

// TestNewcMatchesURoot: the initramfs writer (newc.go) writes byte for byte what u-root's
// pkg/cpio writes for the same entries (directories, a device node, files of every length
// modulo 4, from memory and from a file, names of every length modulo 4), trailer included;
// and u-root's reader reads them back.
func TestNewcMatchesURoot(t *testing.T) {
	onDisk := filepath.Join(t.TempDir(), "init")
	if err := os.WriteFile(onDisk, []byte(strings.Repeat("\x7fELF", 1001)), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *os.File {
		f, err := os.Open(onDisk)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	type file struct {
		name string
		data []byte
		perm uint32
	}
	files := []file{{"a/b", nil, 0o600}, {"a/bc", []byte("x"), 0o644}, {"a/bcd", []byte("xy"), 0o755},
		{"a/bcde", []byte("xyz"), 0o600}, {"modules/order", []byte("9p.ko\nvirtio_mmio.ko\n"), 0o600}}
	var ours []newcEntry
	var theirs []cpio.Record
	for _, d := range []string{"a", "dev", "modules", "proc"} {
		ours = append(ours, newcEntry{name: d, mode: newcIFDIR | 0o755})
		theirs = append(theirs, cpio.Directory(d, 0o755))
	}
	ours = append(ours, newcEntry{name: "dev/console", mode: newcIFCHR | 0o600, rmajor: 5, rminor: 1})
	theirs = append(theirs, cpio.CharDev("dev/console", 0o600, 5, 1))
	for _, f := range files {
		ours = append(ours, newcEntry{name: f.name, mode: newcIFREG | f.perm, size: int64(len(f.data)), data: bytes.NewReader(f.data)})
		theirs = append(theirs, cpio.StaticRecord(f.data, cpio.Info{Name: f.name, Mode: cpio.S_IFREG | uint64(f.perm)}))
	}
	fi, err := os.Stat(onDisk)
	if err != nil {
		t.Fatal(err)
	}
	ours = append(ours, newcEntry{name: "init", mode: newcIFREG | 0o755, size: fi.Size(), data: open()})
	theirs = append(theirs, cpio.Record{ReaderAt: open(), Info: cpio.Info{Name: "init", Mode: cpio.S_IFREG | 0o755, FileSize: uint64(fi.Size())}})
	for i := range theirs {
		theirs[i].Ino, theirs[i].NLink = uint64(i+1), 1
		if theirs[i].Mode&cpio.S_IFMT == cpio.S_IFDIR {
			theirs[i].NLink = 2
		}
	}

	var got, want bytes.Buffer
	if err := writeNewc(&got, ours); err != nil {
		t.Fatalf("writeNewc: %v", err)
	}
	rw := cpio.Newc.Writer(&want)
	if err := cpio.WriteRecords(rw, theirs); err != nil {
		t.Fatal(err)
	}
	if err := cpio.WriteTrailer(rw); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		n := 0
		for n < got.Len() && n < want.Len() && got.Bytes()[n] == want.Bytes()[n] {
			n++
		}
		t.Fatalf("writeNewc wrote %d bytes, u-root %d; first difference at byte %d", got.Len(), want.Len(), n)
	}
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(got.Bytes())))
	if err != nil || len(recs) != len(ours) {
		t.Fatalf("u-root read back %d records (err %v), want %d", len(recs), err, len(ours))
	}
}

// TestNewcRefusesShortData: an entry whose reader ends before its size is an error, not a
// silently corrupt archive.
func TestNewcRefusesShortData(t *testing.T) {
	err := writeNewc(&bytes.Buffer{}, []newcEntry{{name: "f", mode: newcIFREG | 0o600, size: 4, data: strings.NewReader("abc")}})
	if err == nil || !strings.Contains(err.Error(), "wrote 3 bytes, want 4") {
		t.Fatalf("writeNewc(short file) = %v, want a size error", err)
	}
}

// TestNewcRefusesNamesThatDoNotReadBack (V1): a name u-root's reader or the kernel's unpacker
// would read as something else is refused. FuzzNewc found the empty name (read back as ".").
func TestNewcRefusesNamesThatDoNotReadBack(t *testing.T) {
	for _, name := range []string{"", ".", "/init", "a/../b", "../x", "a//b", "a/", "./a", "a\x00b", "TRAILER!!!"} {
		t.Run(name, func(t *testing.T) {
			err := writeNewc(&bytes.Buffer{}, []newcEntry{{name: name, mode: newcIFDIR | 0o755}})
			if err == nil || !strings.Contains(err.Error(), "name") {
				t.Fatalf("writeNewc(name %q) = %v, want the name refused", name, err)
			}
		})
	}
}
