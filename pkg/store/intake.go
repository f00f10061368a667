package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// TaskOverhead is what an unanswered task is charged beyond its text: the signed copy in
// messages, the evidence entry and the row itself. It equals the 1024 in intakeSchema.
const TaskOverhead = 1024

// IntakeQuota bounds the unanswered tasks of strangers (peers in neither the peers table
// nor the trust list), in bytes charged (text plus TaskOverhead each).
type IntakeQuota struct {
	PerStranger int64 // one stranger key
	Strangers   int64 // all strangers together
}

// Errors of Receive when a stranger's task would pass a quota.
var (
	ErrPeerQuota      = errors.New("this peer's unanswered tasks are at its quota")
	ErrStrangersQuota = errors.New("strangers' unanswered tasks are at their quota")
)

// QuotaError is a task refused for a quota: Err is ErrPeerQuota or ErrStrangersQuota.
type QuotaError struct {
	Err         error
	Used, Limit int64 // bytes charged now, and the quota
	Charge      int64 // what this task would add
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%v: %d of %d bytes used, this task needs %d", e.Err, e.Used, e.Limit, e.Charge)
}

func (e *QuotaError) Unwrap() error { return e.Err }

// checkQuota refuses a stranger's task that would pass q; it runs inside Receive's
// transaction, so concurrent tasks cannot both fit into the last room.
func checkQuota(ctx context.Context, tx *sql.Tx, peer, text string, q IntakeQuota) error {
	charge := int64(len(text)) + TaskOverhead
	var mine, all, known int64
	err := tx.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT bytes FROM intake_usage WHERE peer = ?), 0),
		COALESCE((SELECT bytes FROM intake_usage WHERE peer = ''), 0),
		COALESCE((SELECT SUM(bytes) FROM intake_usage WHERE peer != '' AND peer IN (SELECT aid FROM peers UNION SELECT aid FROM trust)), 0)`,
		peer).Scan(&mine, &all, &known)
	if err != nil {
		return fmt.Errorf("receive task: quota: %w", err)
	}
	if mine+charge > q.PerStranger {
		return &QuotaError{Err: ErrPeerQuota, Used: mine, Limit: q.PerStranger, Charge: charge}
	}
	if s := all - known; s+charge > q.Strangers {
		return &QuotaError{Err: ErrStrangersQuota, Used: s, Limit: q.Strangers, Charge: charge}
	}
	return nil
}

// Usage is what a peer's unanswered inbound tasks are charged.
type Usage struct {
	Tasks int64
	Bytes int64
}

// IntakeUsage returns the usage of one peer, or of all peers together for "".
func (s *Store) IntakeUsage(ctx context.Context, peer string) (Usage, error) {
	var u Usage
	err := s.db.QueryRowContext(ctx, `SELECT tasks, bytes FROM intake_usage WHERE peer = ?`, peer).Scan(&u.Tasks, &u.Bytes)
	if errors.Is(err, sql.ErrNoRows) {
		return Usage{}, nil
	}
	if err != nil {
		return Usage{}, fmt.Errorf("intake usage: %w", err)
	}
	return u, nil
}

// IncomingStamp is one accepted inbound message: who, from where, when.
type IncomingStamp struct {
	Peer string
	Src  string
	At   time.Time
}

// RecentIncoming lists the inbound messages accepted at or after since, oldest first.
func (s *Store) RecentIncoming(ctx context.Context, since time.Time) ([]IncomingStamp, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT peer, src, at_unix FROM messages
		WHERE direction = 'in' AND at_unix >= ? ORDER BY at_unix, id`, since.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("recent messages: %w", err)
	}
	defer rows.Close()
	var out []IncomingStamp
	for rows.Next() {
		var st IncomingStamp
		var at int64
		if err := rows.Scan(&st.Peer, &st.Src, &at); err != nil {
			return nil, fmt.Errorf("recent messages: %w", err)
		}
		st.At = time.Unix(0, at)
		out = append(out, st)
	}
	return out, rows.Err()
}
