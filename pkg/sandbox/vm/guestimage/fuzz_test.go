package guestimage

import (
	"bytes"
	"io"
	"testing"

	"github.com/u-root/u-root/pkg/cpio"
)

// FuzzNewc (V1): whatever the initramfs writer writes, u-root's newc reader (the one
// TestNewcMatchesURoot checks against) reads back as the same entries, or the writer refuses
// with an error; the archive is 4-byte aligned.
func FuzzNewc(f *testing.F) {
	f.Add("dev/console", uint32(newcIFCHR|0o600), uint32(5), uint32(1), []byte(nil), int64(0))
	f.Add("a/bcd", uint32(newcIFREG|0o755), uint32(0), uint32(0), []byte("xy"), int64(2))
	f.Add("modules", uint32(newcIFDIR|0o755), uint32(0), uint32(0), []byte(nil), int64(0))
	f.Add("init", uint32(newcIFREG|0o600), uint32(0), uint32(0), []byte("abc"), int64(4))
	f.Fuzz(func(t *testing.T, name string, mode, rmajor, rminor uint32, data []byte, size int64) {
		e := newcEntry{name: name, mode: mode, rmajor: rmajor, rminor: rminor, size: size}
		if data != nil {
			e.data = bytes.NewReader(data)
		}
		entries := []newcEntry{{name: "etc", mode: newcIFDIR | 0o755}, e}
		var out bytes.Buffer
		if err := writeNewc(&out, entries); err != nil {
			return
		}
		if out.Len()%4 != 0 {
			t.Fatalf("writeNewc(%q) wrote %d bytes, not 4-byte aligned", name, out.Len())
		}
		recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(out.Bytes())))
		if err != nil || len(recs) != len(entries) {
			t.Fatalf("u-root read back %d records of writeNewc(%q) (err %v), want %d", len(recs), name, err, len(entries))
		}
		r := recs[1]
		var content []byte
		if r.ReaderAt != nil {
			content, _ = io.ReadAll(io.NewSectionReader(r.ReaderAt, 0, int64(r.FileSize)))
		}
		wantData := data
		if r.Name != name || uint32(r.Mode) != mode || uint32(r.Rmajor) != rmajor || uint32(r.Rminor) != rminor ||
			!bytes.Equal(content, wantData) || int64(r.FileSize) != int64(len(wantData)) {
			t.Fatalf("u-root read {%q %#o %d:%d %q}, writeNewc was given {%q %#o %d:%d %q}",
				r.Name, r.Mode, r.Rmajor, r.Rminor, content, name, mode, rmajor, rminor, wantData)
		}
	})
}
