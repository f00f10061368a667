package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenFreshDatabase(t *testing.T) {
	old := umask(0) // the mode must not depend on a permissive umask
	defer umask(old)
	path := filepath.Join(t.TempDir(), "anet.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s) error = %v", path, err)
	}
	defer s.Close()
	ctx := context.Background()

	v, err := currentVersion(ctx, s.DB())
	if err != nil {
		t.Fatal(err)
	}
	if v != SchemaVersion() || SchemaVersion() != len(migrations) {
		t.Errorf("schema version = %d (build knows %d), want %d", v, SchemaVersion(), len(migrations))
	}
	for _, table := range []string{"evidence", "meta", "schema_migrations"} {
		var name string
		err := s.DB().QueryRowContext(ctx, `SELECT name FROM sqlite_master WHERE type='table' AND name=?`, table).Scan(&name)
		if err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}

	// Write something so SQLite creates its -wal and -shm files, then check every file's mode.
	appendN(t, s, newSeedSigner(1), 3)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		st, err := os.Stat(path + suffix)
		if err != nil {
			t.Fatalf("stat %s: %v", path+suffix, err)
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("mode of %s = %04o, want 0600", filepath.Base(path+suffix), got)
		}
	}
}

// TestPragmas checks the durability settings on every pooled connection: the chain is the
// budget's source of truth (B5), so a commit must reach the disk.
func TestPragmas(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	// Hold several connections at once so the check is not only about the first one.
	var conns []*sql.Conn
	for i := 0; i < 3; i++ {
		c, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	tests := []struct {
		pragma, want string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "2"}, // FULL
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
	}
	for i, c := range conns {
		for _, tt := range tests {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+tt.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("conn %d: PRAGMA %s = %s, want %s", i, tt.pragma, got, tt.want)
			}
		}
		c.Close()
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anet.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`INSERT INTO schema_migrations(version, applied_at) VALUES(999, 'future')`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2, err := Open(path)
	if err == nil {
		s2.Close()
		t.Fatalf("Open(db at version 999) succeeded, want an error")
	}
	for _, want := range []string{path, "schema version 999", fmt.Sprintf("newer than this build knows (%d)", SchemaVersion())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(db at version 999) error = %q, want it to contain %q", err, want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.db")
	if err := os.WriteFile(loose, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing parent directory", filepath.Join(dir, "nope", "anet.db"), "parent directory"},
		{"group-readable file", loose, "chmod 600"},
		{"directory", dir, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) succeeded, want error containing %q", tt.path, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("Open(%s) error = %q, want it to name the path and contain %q", tt.path, err, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open created the missing parent directory; it must not")
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anet.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	signer := newSeedSigner(1)
	appendN(t, s, signer, 5)
	if err := s.SetMeta(context.Background(), "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	res, err := s.Verify(context.Background(), signer.Public())
	if err != nil || res.Entries != 5 {
		t.Errorf("Verify after reopen = %d entries, %v; want 5, nil", res.Entries, err)
	}
	var rows int
	s.DB().QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&rows)
	if rows != SchemaVersion() {
		t.Errorf("schema_migrations rows after reopen = %d, want %d (no migration applied twice)", rows, SchemaVersion())
	}
	if v, ok, err := s.Meta(context.Background(), "k"); v != "v" || !ok || err != nil {
		t.Errorf("Meta(k) = %q, %v, %v; want v, true, nil", v, ok, err)
	}
}

// TestMigrationsExtend shows how a later issue adds a table: append a step. Each step runs in
// its own transaction, so a failing step leaves the previous version intact.
func TestMigrationsExtend(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "anet.db")
	// Start from the foundation's schema (version 1), whatever later issues appended.
	s, err := open(ctx, path, migrations[:1])
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	broken := append(append([]migration(nil), migrations[:1]...),
		migration{version: 2, name: "peers", stmts: []string{`CREATE TABLE peers (aid TEXT PRIMARY KEY)`}},
		migration{version: 3, name: "broken", stmts: []string{`CREATE TABLE half (x)`, `CREATE TABLE oops (`}},
	)
	if s, err := open(ctx, path, broken); err == nil {
		s.Close()
		t.Fatalf("open with a broken migration succeeded, want error")
	} else if !strings.Contains(err.Error(), "migrate to version 3 (broken)") {
		t.Errorf("broken migration error = %q, want it to name version 3", err)
	}

	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	v, _ := currentVersion(ctx, raw)
	if v != 2 {
		t.Errorf("version after failed step 3 = %d, want 2 (step 2 committed, step 3 rolled back)", v)
	}
	for table, want := range map[string]bool{"peers": true, "half": false} {
		var n int
		raw.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name=?`, table).Scan(&n)
		if got := n == 1; got != want {
			t.Errorf("table %s exists = %v, want %v", table, got, want)
		}
	}

	// A list whose versions are out of order is a programming error caught at open.
	bad := []migration{{version: 2, name: "skips 1"}}
	if _, err := open(ctx, filepath.Join(t.TempDir(), "x.db"), bad); err == nil || !strings.Contains(err.Error(), "want 1") {
		t.Errorf("open with misnumbered migrations error = %v, want a numbering error", err)
	}
}

func TestEvidenceIsAppendOnlyInsideTheNode(t *testing.T) {
	s := openTemp(t)
	appendN(t, s, newSeedSigner(1), 2)
	for _, q := range []string{`UPDATE evidence SET kind = 'x' WHERE seq = 1`, `DELETE FROM evidence WHERE seq = 2`} {
		_, err := s.DB().Exec(q)
		if err == nil || !strings.Contains(err.Error(), "evidence is append-only") {
			t.Errorf("Exec(%q) error = %v, want 'evidence is append-only'", q, err)
		}
	}
}
