package guestimage

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
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

// bzHeader is a minimal bzImage: the boot protocol header at its offsets, setup_sects 1, the
// kernel version string at 0x300, and a payload of n bytes at payload_offset off.
func bzHeader(off, n uint32, proto uint16) []byte {
	b := make([]byte, 0x400+int(off)+int(n))
	b[offSetupSects] = 1
	copy(b[offHeaderMagic:], "HdrS")
	binary.LittleEndian.PutUint16(b[offVersion:], proto)
	binary.LittleEndian.PutUint16(b[0x20e:], 0x100)
	copy(b[0x300:], "6.1.0-test\x00")
	binary.LittleEndian.PutUint32(b[offPayloadOffset:], off)
	binary.LittleEndian.PutUint32(b[offPayloadLength:], n)
	return b
}

// FuzzBzImage (V1): a kernel package's bzImage is read for its payload and an ELF's notes
// for the PVH entry. Whatever the bytes, bzPayload's payload is a non-empty part of the file
// past its setup, and its version a string of the file without a NUL; hasNote finds a note
// only where the name it looks for is in the bytes.
func FuzzBzImage(f *testing.F) {
	f.Add(bzHeader(0, 16, 0x20f))
	f.Add(bzHeader(64, 1, 0x208))
	f.Add(bzHeader(0, 16, 0x207))
	note := make([]byte, 12, 20)
	binary.LittleEndian.PutUint32(note[0:], 4)
	binary.LittleEndian.PutUint32(note[4:], 4)
	binary.LittleEndian.PutUint32(note[8:], xenElfnotePhys32Entry)
	f.Add(append(note, "Xen\x00\x01\x02\x03\x04"...))
	f.Fuzz(func(t *testing.T, b []byte) {
		if hasNote(b, "Xen", xenElfnotePhys32Entry) && !bytes.Contains(b, []byte("Xen")) {
			t.Fatalf("hasNote found a Xen note in %x, which has no such name", b)
		}
		payload, version, err := bzPayload(b)
		if err != nil {
			return
		}
		if len(payload) == 0 || !bytes.Contains(b[0x200:], payload) {
			t.Fatalf("bzPayload gave %d bytes that are not a part of the file past its setup", len(payload))
		}
		if strings.IndexByte(version, 0) >= 0 || !bytes.Contains(b, []byte(version)) {
			t.Fatalf("bzPayload's version %q is not a NUL-free string of the file", version)
		}
	})
}
