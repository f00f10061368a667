package store

import (
	"context"
	"database/sql"
	"sync"
)

// Statements of the append path are prepared once per database connection and reused: parsing
// the SQL again for every entry cost a quarter of an append's CPU.
type stmtCache struct {
	mu sync.Mutex // guards m
	m  map[string]*sql.Stmt
}

// txStmt returns query prepared for use inside tx. If it cannot be prepared (it will fail
// the same way when run), the caller gets an error from the statement itself.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	c := &s.stmts
	c.mu.Lock()
	st := c.m[query]
	if st == nil {
		var err error
		if st, err = s.db.PrepareContext(ctx, query); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		if c.m == nil {
			c.m = map[string]*sql.Stmt{}
		}
		c.m[query] = st
	}
	c.mu.Unlock()
	return tx.StmtContext(ctx, st), nil
}

// txExec runs query in tx through the statement cache.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := s.txStmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// txQueryRow scans one row of query in tx through the statement cache.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) error {
	st, err := s.txStmt(ctx, tx, query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}
