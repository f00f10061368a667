package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"
)

// migration is one schema step. Versions are 1, 2, 3, … in slice order; each is applied in
// its own transaction together with its schema_migrations row, so a failed step leaves the
// database at the previous version. Never edit a released step: append a new one.
type migration struct {
	version int
	name    string
	stmts   []string
}

// migrations is the schema history. Later issues append peers, trust, inbox, outbox and runs.
var migrations = []migration{
	{
		version: 1,
		name:    "evidence chain and meta",
		stmts: []string{
			`CREATE TABLE meta (
				key   TEXT PRIMARY KEY,
				value TEXT NOT NULL
			)`,
			// seq is the rowid: a second writer that read a stale head cannot insert a
			// duplicate sequence number and fork the chain.
			`CREATE TABLE evidence (
				seq         INTEGER PRIMARY KEY CHECK (seq >= 1),
				time        TEXT    NOT NULL,
				unix_nano   INTEGER NOT NULL,
				kind        TEXT    NOT NULL,
				peer        TEXT    NOT NULL,
				interaction TEXT    NOT NULL,
				details     TEXT    NOT NULL,
				prev_hash   BLOB    NOT NULL CHECK (length(prev_hash) = 32),
				hash        BLOB    NOT NULL CHECK (length(hash) = 32),
				sig         BLOB    NOT NULL CHECK (length(sig) = 64)
			)`,
			`CREATE INDEX evidence_kind_time ON evidence(kind, unix_nano)`,
			`CREATE INDEX evidence_peer_time ON evidence(peer, unix_nano)`,
			`CREATE INDEX evidence_time ON evidence(unix_nano)`,
			// Append-only inside the node: a bug that updates or deletes an entry fails
			// loudly. (Someone with the file can drop these; Verify catches that.)
			`CREATE TRIGGER evidence_no_update BEFORE UPDATE ON evidence
				BEGIN SELECT RAISE(ABORT, 'evidence is append-only'); END`,
			`CREATE TRIGGER evidence_no_delete BEFORE DELETE ON evidence
				BEGIN SELECT RAISE(ABORT, 'evidence is append-only'); END`,
		},
	},
	{
		version: 2,
		name:    "peers, trust, interactions, messages, outbox",
		stmts:   peerSchema,
	},
	{
		version: 3,
		name:    "intake: message sources and times, unanswered task usage",
		stmts:   intakeSchema,
	},
	{
		version: 4,
		name:    "evidence checkpoints",
		stmts:   checkpointSchema,
	},
	{
		version: 5,
		name:    "receipts of runs",
		stmts:   receiptsSchema,
	},
}

// SchemaVersion is the newest schema version this build knows.
func SchemaVersion() int { return len(migrations) }

func checkMigrationList(list []migration) error {
	for i, m := range list {
		if m.version != i+1 {
			return fmt.Errorf("migration %d (%s) has version %d, want %d", i, m.name, m.version, i+1)
		}
	}
	return nil
}

// migrate brings db to the newest version in list. Concurrent openers are safe: each step
// re-reads the version inside its IMMEDIATE transaction.
func migrate(ctx context.Context, db *sql.DB, list []migration) error {
	if err := checkMigrationList(list); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	for {
		done, err := migrateStep(ctx, db, list)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

func currentVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// migrateStep applies the next pending migration, or reports done.
func migrateStep(ctx context.Context, db *sql.DB, list []migration) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback()
	cur, err := currentVersion(ctx, tx)
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	if cur > len(list) {
		return false, fmt.Errorf("schema version %d is newer than this build knows (%d): use the anet release that wrote it or a newer one", cur, len(list))
	}
	if cur == len(list) {
		return true, nil
	}
	m := list[cur]
	for _, stmt := range m.stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return false, fmt.Errorf("migrate to version %d (%s): %w", m.version, m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, applied_at) VALUES(?, ?)`,
		m.version, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return false, fmt.Errorf("migrate to version %d: record: %w", m.version, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate to version %d: commit: %w", m.version, err)
	}
	slog.Info("store schema migrated", "version", m.version, "name", m.name)
	return false, nil
}
