package guestimage

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path"
	"strings"
)

// The initramfs is a cpio archive in the "newc" format (magic 070701), the one the kernel's
// initramfs unpacker reads (Documentation/driver-api/early-userspace/buffer-format.rst): per
// entry a header of thirteen 8-digit hex fields, the NUL-terminated name, padding to 4 bytes,
// the data, padding to 4 bytes; a TRAILER!!! entry ends it. It is written here rather than
// with a cpio library because anet-sandboxd starts once per `exec` and initialises every
// package it links; TestNewcMatchesURoot proves the output byte for byte what u-root's
// pkg/cpio (the library u-root builds its own images with) writes for the same entries.

// File type bits of a newc entry's mode (stat's S_IF*).
const (
	newcIFMT  = 0o170000
	newcIFDIR = 0o040000
	newcIFCHR = 0o020000
	newcIFREG = 0o100000
)

// newcTrailer names the entry that ends an archive.
const newcTrailer = "TRAILER!!!"

// newcEntry is one entry: a directory, a device node or a regular file of size bytes read
// from data. Owner and modification time are 0 in every entry.
type newcEntry struct {
	name           string // relative and clean: "dev/console"
	mode           uint32 // type and permission bits
	rmajor, rminor uint32 // a device node's number
	size           int64
	data           io.Reader // nil for an entry without data
}

// writeNewc writes entries and the trailer to w. Inode numbers count from 1 in entry order;
// a directory has two links, any other entry one.
func writeNewc(w io.Writer, entries []newcEntry) error {
	nw := &newcWriter{w: bufio.NewWriterSize(w, 64<<10)}
	for i, e := range entries {
		if err := checkNewcName(e.name); err != nil {
			return fmt.Errorf("cpio entry %d: %w", i+1, err)
		}
		nlink := uint32(1)
		if e.mode&newcIFMT == newcIFDIR {
			nlink = 2
		}
		if err := nw.entry(uint32(i+1), nlink, e); err != nil {
			return fmt.Errorf("cpio %s: %w", e.name, err)
		}
	}
	if err := nw.entry(0, 0, newcEntry{name: newcTrailer}); err != nil {
		return fmt.Errorf("cpio trailer: %w", err)
	}
	return nw.w.Flush()
}

// checkNewcName refuses a name the kernel's unpacker and cpio readers would not read back
// as written: empty or ".", absolute, unclean or climbing out ("a/../b", "../x"), holding a
// NUL (the header's name ends at the first), or the trailer's (the archive would end there).
func checkNewcName(name string) error {
	switch {
	case name == "" || name == "." || path.IsAbs(name) || path.Clean(name) != name ||
		name == ".." || strings.HasPrefix(name, "../"):
		return fmt.Errorf("name %q: want a clean relative path", name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("name %q: holds a NUL byte", name)
	case name == newcTrailer:
		return fmt.Errorf("name %q: is the trailer's", name)
	}
	return nil
}

type newcWriter struct {
	w   *bufio.Writer
	pos int64
}

func (nw *newcWriter) Write(b []byte) (int, error) {
	n, err := nw.w.Write(b)
	nw.pos += int64(n)
	return n, err
}

// pad writes zeros up to the next multiple of 4 bytes.
func (nw *newcWriter) pad() error {
	_, err := nw.Write(make([]byte, (4-nw.pos%4)%4))
	return err
}

func (nw *newcWriter) entry(ino, nlink uint32, e newcEntry) error {
	size := e.size
	if e.data == nil {
		size = 0
	}
	if size < 0 || size > math.MaxUint32 {
		return fmt.Errorf("size %d does not fit a newc header", size)
	}
	// ino mode uid gid nlink mtime filesize devmajor devminor rdevmajor rdevminor namesize check
	if _, err := fmt.Fprintf(nw, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%s\x00",
		ino, e.mode, 0, 0, nlink, 0, size, 0, 0, e.rmajor, e.rminor, len(e.name)+1, 0, e.name); err != nil {
		return err
	}
	if err := nw.pad(); err != nil {
		return err
	}
	if e.data == nil {
		return nil
	}
	n, err := io.Copy(nw, e.data)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("wrote %d bytes, want %d", n, size)
	}
	return nw.pad()
}
