// Package store is the node's SQLite database (modernc.org/sqlite, no cgo): schema
// migrations, a small key/value meta table, and the evidence chain. Later parts of the node
// (peers, trust, inbox, outbox, runs) add their tables as new entries of the migrations list.
//
// # Durability
//
// Every connection runs with journal_mode=WAL, synchronous=FULL, foreign_keys=ON and
// busy_timeout=5000, and every read-write transaction starts with BEGIN IMMEDIATE (the
// driver's _txlock=immediate), so a transaction that reads and then writes never fails half
// way with SQLITE_BUSY_SNAPSHOT. The evidence chain is the source of truth for the run budget
// (B5): a committed entry must survive a crash of the process or the machine.
//
// # Evidence chain
//
// An entry has a sequence number (1-based, gapless), a time (UTC), a kind ([a-z_]+), a peer
// (an aid or empty), an interaction (or empty), details (a JSON object, stored in compact
// form), the previous entry's hash (32 zero bytes for entry 1), its own hash and an Ed25519
// signature by the node key.
//
// Canonical encoding, from which the hash is computed (a second implementation must produce
// the same bytes):
//
//	"anet-evidence-v1"                       16 ASCII bytes, no length prefix
//	then for each field, in this order:      4-byte big-endian length, then the bytes
//	  seq          decimal ASCII, no sign, no leading zeros ("1", "17")
//	  time         UTC in Go's time.RFC3339Nano layout "2006-01-02T15:04:05.999999999Z07:00":
//	               fractional seconds with trailing zeros removed, no fraction when zero,
//	               always the "Z" suffix ("2026-11-29T08:00:00.1234Z")
//	  kind         ASCII
//	  peer         the aid, or empty (length 0)
//	  interaction  UTF-8, or empty
//	  details      the stored compact JSON object, byte for byte
//	  prev_hash    32 raw bytes
//
//	hash = SHA-256(encoding)
//
// Signatures. Entries written before schema version 4 each carry sig = Ed25519(node key,
// hash) (the 32 hash bytes are the signed message). Since then an entry's sig is empty and
// every transaction that appends ends with a signed checkpoint of the chain's head
// (checkpoint.go: "anet-evidence-checkpoint-v1", the head's seq, time and hash): the hash
// links carry that one signature back over every entry of the commit group. Concurrent
// appends share a group (group.go), so they share the signature and the fsync.
//
// Verify recomputes all of this and checks every signature; it also checks that the
// unix_nano column used by range queries (the budget's day windows) agrees with the signed
// time text, and that the receipts a turn_completed entry names by digest are stored
// unchanged beside it (receipts.go). What the chain cannot show on its own is truncation:
// deleting the newest entries leaves a valid, shorter chain. VerifyResult.Head is the value
// to record elsewhere to detect that.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Store is an open database. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string

	// group queues this process's write transactions (writeTx) in order and commits them
	// in groups (group.go) instead of each polling SQLite's busy handler.
	group committer
	// stmts holds the append path's prepared statements (stmtcache.go).
	stmts stmtCache

	// full is whether the last write found the disk full (noteWrite logs each change once).
	full atomic.Bool

	// now is the clock for new entries; tests replace it.
	now func() time.Time

	// onAppend hears each evidence entry appended (SetOnAppend); nil hears nothing.
	onAppend atomic.Pointer[func(kind string)]
}

// SetOnAppend makes f hear the kind of every evidence entry appended from now on (the
// node's metrics count them), once the entry is committed when the store runs the
// transaction (Append and every write of its own). In a transaction the caller began
// itself, whose commit the store does not see, f hears the entry when AppendTx inserts it,
// so an entry the caller then rolls back is heard all the same. f runs on the writer's path
// and must not block or write to the store. nil stops it.
func (s *Store) SetOnAppend(f func(kind string)) {
	if f == nil {
		s.onAppend.Store(nil)
		return
	}
	s.onAppend.Store(&f)
}

// appended tells the hook about committed entries of kinds.
func (s *Store) appended(kinds ...string) {
	if f := s.onAppend.Load(); f != nil {
		for _, k := range kinds {
			(*f)(k)
		}
	}
}

// WAL bounds: a checkpoint runs at the commit that takes the WAL past walCheckpointPages,
// and the next write after it cuts the file back to walSizeLimit, so the WAL stays near
// that size instead of keeping its high-water mark (Checkpoint recovers from a checkpoint
// that a long read held back).
const (
	walCheckpointPages = 256     // 1 MiB with 4 KiB pages
	walSizeLimit       = 1 << 20 // bytes
)

// dsnParams are applied by the driver to every new connection. busy_timeout first, so that
// the journal_mode switch itself waits for a lock instead of failing.
var dsnParams = "_pragma=busy_timeout(5000)" +
	"&_pragma=journal_mode(WAL)" +
	"&_pragma=synchronous(FULL)" +
	"&_pragma=foreign_keys(1)" +
	fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)", walCheckpointPages) +
	fmt.Sprintf("&_pragma=journal_size_limit(%d)", walSizeLimit) +
	"&_txlock=immediate"

// Open opens or creates the database at path and brings its schema up to date. The parent
// directory must exist. A new file is created with mode 0600; an existing file that group or
// others can access is refused. A database whose schema is newer than this build is refused.
func Open(path string) (*Store, error) {
	return open(context.Background(), path, migrations)
}

func open(ctx context.Context, path string, list []migration) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := prepareFile(abs); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// A file: URI, so the path is escaped and cannot be mistaken for parameters.
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + dsnParams
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{db: db, path: abs, now: time.Now}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, diskFull(filepath.Dir(abs), err))
	}
	if err := migrate(ctx, db, list); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, diskFull(filepath.Dir(abs), err))
	}
	return s, nil
}

// prepareFile creates the database file with mode 0600 before SQLite sees it: SQLite would
// create it 0644, and it gives its -wal and -shm files the mode of the main file.
func prepareFile(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("parent directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("parent %s is not a directory", dir)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create: %w", err)
	}
	fst, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fst.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if perm := fst.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("mode %04o lets group or others read the node's records; run: chmod 600 %s", perm, path)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// FreeBytes is the space left to an unprivileged process on the file system that holds the
// database (errors.ErrUnsupported where the platform cannot tell).
func (s *Store) FreeBytes() (int64, error) { return freeBytes(filepath.Dir(s.path)) }

// Checkpoint copies the WAL into the database and truncates it to zero bytes when it can
// do so at once; it never waits. The node runs it periodically: the automatic checkpoints
// cannot reset the WAL while a reader holds an old snapshot, and this catches up once the
// reader is gone. It runs on a connection of its own with no busy wait, so a writer or a
// reader in the way makes it give up until next time instead of holding up intake.
func (s *Store) Checkpoint(ctx context.Context) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", s.path, err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
		return fmt.Errorf("checkpoint %s: %w", s.path, err)
	}
	// The connection goes back to the pool: give it back its wait.
	defer c.ExecContext(context.WithoutCancel(ctx), `PRAGMA busy_timeout = 5000`)
	var busy, frames, done int
	err = c.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done)
	if err != nil && !strings.Contains(err.Error(), "locked") && !strings.Contains(err.Error(), "busy") {
		return fmt.Errorf("checkpoint %s: %w", s.path, err)
	}
	return nil
}

// DB returns the database handle for packages that add their own queries. A transaction
// begun on it (without ReadOnly) starts with BEGIN IMMEDIATE and can be passed to AppendTx.
func (s *Store) DB() *sql.DB { return s.db }

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Meta returns the value stored under key in the meta table.
func (s *Store) Meta(ctx context.Context, key string) (value string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read meta %q: %w", key, err)
	}
	return value, true, nil
}

// SetMeta stores value under key in the meta table, replacing an existing value.
func (s *Store) SetMeta(ctx context.Context, key, value string) error {
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
		key, value)
	if err := s.noteWrite(err); err != nil {
		return fmt.Errorf("write meta %q: %w", key, err)
	}
	return nil
}
