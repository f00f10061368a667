package store

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"syscall"

	"modernc.org/sqlite"

	"anet.dev/anet/pkg/reasons"
)

// sqliteFull is SQLITE_FULL, the primary result code of a write that found no room;
// sqliteIOErr is SQLITE_IOERR, the primary code of every failed read or write of a file.
const (
	sqliteFull  = 13
	sqliteIOErr = 10
)

// DiskFullError is a write refused because the file system under the data dir is full. SQLite
// rolls the transaction back whole, so nothing stored before is lost; the same write succeeds
// once there is room.
type DiskFullError struct {
	Dir string // the directory of the database
	Err error  // the driver's or the OS's error
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("the file system of the data dir %s is full (%v): nothing stored is lost, but nothing new can be recorded until there is room; free space there (df -h %s), or move the data dir to a larger file system",
		e.Dir, e.Err, shellArg(e.Dir))
}

// Reason is reasons.DiskFull.
func (e *DiskFullError) Reason() reasons.Code { return reasons.DiskFull }

func (e *DiskFullError) Unwrap() error { return e.Err }

// ioErrRoom is the free space under which SQLite's bare "disk I/O error" is taken for a full
// disk: growing the -shm file at open (SQLITE_IOERR_SHMSIZE) or the WAL fails so, without
// saying ENOSPC, and a few pages are all the store ever asks for at once.
const ioErrRoom = 256 << 10

// isDiskFull reports whether err is SQLite's "database or disk is full", the OS's ENOSPC, or
// SQLite's I/O error on a file system in dir that has (next to) no room left.
func isDiskFull(dir string, err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteFull:
			return true
		case sqliteIOErr:
			free, ferr := freeBytes(dir)
			return ferr == nil && free < ioErrRoom
		}
	}
	return errors.Is(err, syscall.ENOSPC)
}

// diskFull returns err as a *DiskFullError naming dir when it is a full disk, else err.
func diskFull(dir string, err error) error {
	var de *DiskFullError
	if err == nil || errors.As(err, &de) || !isDiskFull(dir, err) {
		return err
	}
	return &DiskFullError{Dir: dir, Err: err}
}

// noteWrite is every write's outcome on its way back: a full disk becomes a *DiskFullError,
// logged once when the store goes full (not for each write refused while it stays full) and
// once when a write succeeds again.
func (s *Store) noteWrite(err error) error {
	dir := filepath.Dir(s.path)
	err = diskFull(dir, err)
	var de *DiskFullError
	switch {
	case errors.As(err, &de):
		if s.full.CompareAndSwap(false, true) {
			slog.Error("store: disk full; writes are refused until there is room", "code", reasons.DiskFull, "dir", dir, "err", de.Err)
		}
	case err == nil:
		if s.full.CompareAndSwap(true, false) {
			slog.Info("store: writes succeed again after the disk was full", "dir", dir)
		}
	}
	return err
}

// shellArg quotes a path for a command the operator copies, only when it needs quoting.
func shellArg(s string) string {
	for _, r := range s {
		if !(r == '/' || r == '.' || r == '_' || r == '-' || r == '+' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "'" + escapeQuotes(s) + "'"
		}
	}
	return s
}

func escapeQuotes(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }
