package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// entryColumns is the column list every entry query selects, in scanEntry's order.
const entryColumns = `seq, time, unix_nano, kind, peer, interaction, details, prev_hash, hash, sig`

// rawEntry is a row as stored, before any check; Verify needs the raw values.
type rawEntry struct {
	seq                     int64
	timeText                string
	unixNano                int64
	kind, peer, interaction string
	details                 string
	prevHash, hash, sig     []byte
}

func scanRaw(sc interface{ Scan(...any) error }) (rawEntry, error) {
	var r rawEntry
	err := sc.Scan(&r.seq, &r.timeText, &r.unixNano, &r.kind, &r.peer, &r.interaction,
		&r.details, &r.prevHash, &r.hash, &r.sig)
	return r, err
}

// entry converts a stored row; it fails only on a row Verify would also reject.
func (r rawEntry) entry() (Entry, error) {
	t, err := time.Parse(time.RFC3339Nano, r.timeText)
	if err != nil {
		return Entry{}, fmt.Errorf("evidence entry %d: time %q: %w", r.seq, r.timeText, err)
	}
	if len(r.prevHash) != 32 || len(r.hash) != 32 {
		return Entry{}, fmt.Errorf("evidence entry %d: malformed hash column", r.seq)
	}
	e := Entry{
		Seq: r.seq, Time: t.UTC(), Kind: r.kind, Peer: r.peer, Interaction: r.interaction,
		Details: []byte(r.details), Sig: r.sig,
	}
	copy(e.PrevHash[:], r.prevHash)
	copy(e.Hash[:], r.hash)
	return e, nil
}

// ListOptions selects entries. Zero fields do not filter.
type ListOptions struct {
	Since time.Time // entries at or after this time
	Kind  string
	Peer  string
	// Interaction selects one interaction's entries.
	Interaction string
	Limit       int // at most this many (the oldest first); 0 means no limit
	// After and Through bound the sequence numbers (After < seq <= Through; 0: no bound), for
	// a reader that pages through the chain (the export) instead of holding it whole.
	After, Through int64
	// Before selects entries with a sequence number below it (0: no bound), so that a long
	// chain is read a page at a time.
	Before int64
	// Newest takes the newest Limit entries that match instead of the oldest; they are still
	// returned in sequence order.
	Newest bool
}

// List returns the entries that match opts in sequence order.
func (s *Store) List(ctx context.Context, opts ListOptions) ([]Entry, error) {
	if opts.Limit < 0 {
		return nil, fmt.Errorf("list evidence: limit %d is negative", opts.Limit)
	}
	var (
		where []string
		args  []any
	)
	if !opts.Since.IsZero() {
		where = append(where, "unix_nano >= ?")
		args = append(args, opts.Since.UnixNano())
	}
	if opts.Kind != "" {
		where = append(where, "kind = ?")
		args = append(args, opts.Kind)
	}
	if opts.Peer != "" {
		where = append(where, "peer = ?")
		args = append(args, opts.Peer)
	}
	if opts.Interaction != "" {
		where = append(where, "interaction = ?")
		args = append(args, opts.Interaction)
	}
	if opts.After > 0 {
		where = append(where, "seq > ?")
		args = append(args, opts.After)
	}
	if opts.Through > 0 {
		where = append(where, "seq <= ?")
		args = append(args, opts.Through)
	}
	if opts.Before > 0 {
		where = append(where, "seq < ?")
		args = append(args, opts.Before)
	}
	q := `SELECT ` + entryColumns + ` FROM evidence`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if opts.Newest {
		q += " ORDER BY seq DESC"
	} else {
		q += " ORDER BY seq"
	}
	if opts.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, opts.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list evidence: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		r, err := scanRaw(rows)
		if err != nil {
			return nil, fmt.Errorf("list evidence: %w", err)
		}
		e, err := r.entry()
		if err != nil {
			return nil, fmt.Errorf("list evidence: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list evidence: %w", err)
	}
	if opts.Newest {
		slices.Reverse(out)
	}
	return out, nil
}

// Last returns the newest entry; ok is false when the chain is empty.
func (s *Store) Last(ctx context.Context) (e Entry, ok bool, err error) {
	return s.last("last evidence", s.db.QueryRowContext(ctx, `SELECT `+entryColumns+` FROM evidence ORDER BY seq DESC LIMIT 1`))
}

// LastOf returns the newest entry of kind (anetd's last proof of the wall at start); ok is
// false when there is none.
func (s *Store) LastOf(ctx context.Context, kind string) (e Entry, ok bool, err error) {
	if err := validKind(kind); err != nil {
		return Entry{}, false, fmt.Errorf("last evidence of a kind: %w", err)
	}
	return s.last("last "+kind+" evidence", s.db.QueryRowContext(ctx, `SELECT `+entryColumns+` FROM evidence WHERE kind = ? ORDER BY seq DESC LIMIT 1`, kind))
}

func (s *Store) last(what string, row *sql.Row) (Entry, bool, error) {
	r, err := scanRaw(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("%s: %w", what, err)
	}
	e, err := r.entry()
	if err != nil {
		return Entry{}, false, fmt.Errorf("%s: %w", what, err)
	}
	return e, true, nil
}

// CountFilter selects entries to count. Zero fields do not filter.
type CountFilter struct {
	Kinds []string // any of these kinds
	Peer  string
	From  time.Time // inclusive
	To    time.Time // exclusive
}

// Count returns how many entries match f. The run budget (B5) rebuilds its day counts with
// it; the time bounds use the unix_nano column, which Verify checks against the signed time.
func (s *Store) Count(ctx context.Context, f CountFilter) (int64, error) {
	where, args, err := f.where()
	if err != nil {
		return 0, fmt.Errorf("count evidence: %w", err)
	}
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM evidence`+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count evidence: %w", err)
	}
	return n, nil
}

// where renders f as a WHERE clause ("" when f selects everything) and its arguments.
func (f CountFilter) where() (string, []any, error) {
	var (
		where []string
		args  []any
	)
	if len(f.Kinds) > 0 {
		ph := make([]string, len(f.Kinds))
		for i, k := range f.Kinds {
			if err := validKind(k); err != nil {
				return "", nil, err
			}
			ph[i] = "?"
			args = append(args, k)
		}
		where = append(where, "kind IN ("+strings.Join(ph, ", ")+")")
	}
	if f.Peer != "" {
		where = append(where, "peer = ?")
		args = append(args, f.Peer)
	}
	if !f.From.IsZero() {
		where = append(where, "unix_nano >= ?")
		args = append(args, f.From.UnixNano())
	}
	if !f.To.IsZero() {
		where = append(where, "unix_nano < ?")
		args = append(args, f.To.UnixNano())
	}
	if len(where) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(where, " AND "), args, nil
}
