package guestimage

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
)

// A bzImage (Documentation/arch/x86/boot.rst) is a real-mode setup of (setup_sects+1)*512
// bytes followed by the protected-mode part, whose compressed payload (the vmlinux ELF) sits
// at payload_offset for payload_length bytes. QEMU's microvm machine boots that ELF directly
// through its PVH entry point (a Xen ELF note), skipping the decompressor and the firmware.
const (
	offSetupSects    = 0x1f1
	offHeaderMagic   = 0x202
	offVersion       = 0x206
	offPayloadOffset = 0x248
	offPayloadLength = 0x24c
	// xenElfnotePhys32Entry is XEN_ELFNOTE_PHYS32_ENTRY: the PVH entry point.
	xenElfnotePhys32Entry = 18
)

// decompressor turns a compressed payload into the vmlinux bytes.
type decompressor struct {
	name  string
	magic []byte
	// lib decompresses in-process; tool is the external program otherwise (xz-utils is
	// Priority: required on Debian, so every host that has the package format has it).
	lib  func(io.Reader) (io.Reader, error)
	tool []string
}

var decompressors = []decompressor{
	{name: "gzip", magic: []byte{0x1f, 0x8b}, lib: func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
	{name: "bzip2", magic: []byte("BZh"), lib: func(r io.Reader) (io.Reader, error) { return bzip2.NewReader(r), nil }},
	// --single-stream: the kernel build appends the 4-byte uncompressed size after the stream.
	{name: "xz", magic: []byte{0xfd, '7', 'z', 'X', 'Z', 0}, tool: []string{"xz", "-dc", "--single-stream"}},
	{name: "lzma", magic: []byte{0x5d, 0, 0}, tool: []string{"xz", "-dc", "--format=lzma"}},
	{name: "zstd", magic: []byte{0x28, 0xb5, 0x2f, 0xfd}, tool: []string{"zstd", "-dc"}},
	{name: "lz4", magic: []byte{0x02, 0x21, 0x4c, 0x18}, tool: []string{"lz4", "-dc"}},
}

// bzPayload returns the compressed payload of a bzImage and the kernel's version string.
func bzPayload(b []byte) (payload []byte, version string, err error) {
	if len(b) < 0x250 || string(b[offHeaderMagic:offHeaderMagic+4]) != "HdrS" {
		return nil, "", errors.New("bzImage: no boot protocol header (HdrS)")
	}
	if v := binary.LittleEndian.Uint16(b[offVersion:]); v < 0x208 {
		return nil, "", fmt.Errorf("bzImage: boot protocol %#x has no payload fields (want 2.08+)", v)
	}
	sects := int(b[offSetupSects])
	if sects == 0 {
		sects = 4
	}
	start := (sects + 1) * 512
	off := int(binary.LittleEndian.Uint32(b[offPayloadOffset:]))
	n := int(binary.LittleEndian.Uint32(b[offPayloadLength:]))
	if start+off+n > len(b) || n == 0 {
		return nil, "", fmt.Errorf("bzImage: payload %d+%d+%d lies outside the %d-byte file", start, off, n, len(b))
	}
	// kernel_version (offset 0x20e) points 0x200 bytes before a NUL-terminated string.
	if p := int(binary.LittleEndian.Uint16(b[0x20e:])) + 0x200; p > 0x200 && p < len(b) {
		if end := bytes.IndexByte(b[p:], 0); end > 0 {
			version = string(b[p : p+end])
		}
	}
	return b[start+off : start+off+n], version, nil
}

// extractVmlinux returns the uncompressed kernel ELF inside a bzImage, after checking that
// it has the PVH entry note QEMU's microvm needs.
func extractVmlinux(ctx context.Context, bz []byte) ([]byte, error) {
	payload, _, err := bzPayload(bz)
	if err != nil {
		return nil, err
	}
	var d *decompressor
	for i := range decompressors {
		if bytes.HasPrefix(payload, decompressors[i].magic) {
			d = &decompressors[i]
			break
		}
	}
	if d == nil {
		return nil, fmt.Errorf("bzImage: payload compression % x not recognised", payload[:min(6, len(payload))])
	}
	var out []byte
	if d.lib != nil {
		r, err := d.lib(bytes.NewReader(payload))
		if err == nil {
			out, err = io.ReadAll(r)
		}
		if err != nil && !(len(out) > 0 && errors.Is(err, gzip.ErrChecksum)) {
			return nil, fmt.Errorf("bzImage: %s payload: %w", d.name, err)
		}
	} else {
		cmd := exec.CommandContext(ctx, d.tool[0], d.tool[1:]...)
		cmd.Stdin = bytes.NewReader(payload)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if out, err = cmd.Output(); err != nil {
			return nil, fmt.Errorf("bzImage: %s payload: %s: %w: %s (install the tool that provides %s)", d.name, d.tool[0], err, bytes.TrimSpace(stderr.Bytes()), d.tool[0])
		}
	}
	if err := checkPVH(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkPVH accepts an x86-64 ELF with a XEN_ELFNOTE_PHYS32_ENTRY note (CONFIG_PVH).
func checkPVH(b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("vmlinux: %w", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("vmlinux: machine %v, want x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		notes, err := io.ReadAll(p.Open())
		if err != nil {
			return fmt.Errorf("vmlinux notes: %w", err)
		}
		if hasNote(notes, "Xen", xenElfnotePhys32Entry) {
			return nil
		}
	}
	return errors.New("vmlinux: no PVH entry note (the kernel was built without CONFIG_PVH; QEMU's microvm cannot boot it)")
}

// hasNote walks ELF notes (namesz, descsz, type, name, desc; 4-byte aligned).
func hasNote(b []byte, name string, typ uint32) bool {
	for len(b) >= 12 {
		nsz := binary.LittleEndian.Uint32(b[0:])
		dsz := binary.LittleEndian.Uint32(b[4:])
		t := binary.LittleEndian.Uint32(b[8:])
		b = b[12:]
		n := int((nsz + 3) &^ 3)
		d := int((dsz + 3) &^ 3)
		if n+d > len(b) || nsz > uint32(len(b)) {
			return false
		}
		if t == typ && string(bytes.TrimRight(b[:nsz], "\x00")) == name {
			return true
		}
		b = b[n+d:]
	}
	return false
}
