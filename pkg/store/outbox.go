package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// OutboxItem is a pending outgoing message with the address to deliver it to.
type OutboxItem struct {
	ID int64
	Outgoing
	Attempts int
	// Addr is the peers table's address for the peer, or else, for an answer, the address
	// the task came from; "" when neither is known.
	Addr string
}

// DueOutbox returns up to limit pending messages whose next attempt is at or before t,
// oldest first.
func (s *Store) DueOutbox(ctx context.Context, t time.Time, limit int) ([]OutboxItem, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT o.id, o.peer, o.msg_id, o.type, o.interaction, o.text, o.code, o.until,
			o.attempts, COALESCE(p.addr, i.reply_addr, '')
		FROM outbox o
		LEFT JOIN peers p ON p.aid = o.peer
		LEFT JOIN interactions i ON i.peer = o.peer AND i.interaction = o.interaction AND i.direction = 'in' AND o.type != 'task'
		WHERE o.state = 'pending' AND o.next_attempt_unix <= ?
		ORDER BY o.next_attempt_unix, o.id LIMIT ?`, t.UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	var out []OutboxItem
	for rows.Next() {
		var it OutboxItem
		var until string
		if err := rows.Scan(&it.ID, &it.Peer, &it.MsgID, &it.Type, &it.Interaction, &it.Text, &it.Code, &until,
			&it.Attempts, &it.Addr); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		it.Until = parseStoredTime(until)
		out = append(out, it)
	}
	return out, rows.Err()
}

// NextOutboxAttempt returns the earliest next attempt of a pending message.
func (s *Store) NextOutboxAttempt(ctx context.Context) (time.Time, bool, error) {
	var n sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT MIN(next_attempt_unix) FROM outbox WHERE state = 'pending'`).Scan(&n); err != nil {
		return time.Time{}, false, fmt.Errorf("read outbox: %w", err)
	}
	if !n.Valid {
		return time.Time{}, false, nil
	}
	return time.Unix(0, n.Int64), true, nil
}

// Delivered marks a message delivered, keeps the exact signed bytes the peer accepted and
// appends message_delivered, in one transaction. When an earlier copy was already recorded
// (the peer answered duplicate), that first copy is kept.
func (s *Store) Delivered(ctx context.Context, signer Signer, it OutboxItem, raw []byte, contentHash, digest [32]byte) error {
	return s.writeTx(ctx, "outbox delivered", func(ctx context.Context, tx *sql.Tx) error {
		now := s.now()
		res, err := tx.ExecContext(ctx, `UPDATE outbox SET state = 'delivered', attempts = attempts + 1, last_error = '', done_at = ?
			WHERE id = ? AND state = 'pending'`, formatTime(now), it.ID)
		if err != nil {
			return fmt.Errorf("outbox delivered: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // already settled by another attempt
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages(direction, peer, msg_id, type, interaction, content_hash, raw, at)
			VALUES ('out', ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(direction, peer, msg_id) DO NOTHING`, it.Peer, it.MsgID, it.Type, it.Interaction, contentHash[:], raw, formatTime(now)); err != nil {
			return fmt.Errorf("outbox delivered: %w", err)
		}
		_, err = s.AppendTx(ctx, tx, signer, EntryInput{Kind: "message_delivered", Peer: it.Peer, Interaction: it.Interaction,
			Details: map[string]any{"msg_id": it.MsgID, "type": it.Type, "attempts": it.Attempts + 1, "msg_sha256": hex.EncodeToString(digest[:])}})
		return err
	})
}

// RetryLater records a failed attempt and when to try again.
func (s *Store) RetryLater(ctx context.Context, id int64, next time.Time, why string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_unix = ?
		WHERE id = ? AND state = 'pending'`, why, next.UnixNano(), id)
	if err := s.noteWrite(err); err != nil {
		return fmt.Errorf("outbox retry: %w", err)
	}
	return nil
}

// DeliveryFailed ends the delivery of a message the peer refused for good, with a
// delivery_failed evidence entry.
func (s *Store) DeliveryFailed(ctx context.Context, signer Signer, it OutboxItem, code, why string) error {
	return s.writeTx(ctx, "outbox failed", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE outbox SET state = 'failed', attempts = attempts + 1, last_error = ?, done_at = ?
			WHERE id = ? AND state = 'pending'`, why, formatTime(s.now()), it.ID)
		if err != nil {
			return fmt.Errorf("outbox failed: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		_, err = s.AppendTx(ctx, tx, signer, EntryInput{Kind: "delivery_failed", Peer: it.Peer, Interaction: it.Interaction,
			Details: map[string]any{"msg_id": it.MsgID, "type": it.Type, "code": code, "error": why}})
		return err
	})
}

// OutboxState returns the state of one outbox message by id.
func (s *Store) OutboxState(ctx context.Context, msgID string) (Delivery, error) {
	d, err := scanDelivery(s.db.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM outbox WHERE msg_id = ?`, msgID))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("outbox %s: %w", msgID, ErrNotFound)
	}
	if err != nil {
		return d, fmt.Errorf("outbox %s: %w", msgID, err)
	}
	return d, nil
}

// deliveryCols is the column list scanDelivery reads, in its order.
const deliveryCols = `msg_id, type, state, attempts, last_error, done_at`

func scanDelivery(sc interface{ Scan(...any) error }) (Delivery, error) {
	var d Delivery
	var done string
	if err := sc.Scan(&d.MsgID, &d.Type, &d.State, &d.Attempts, &d.LastError, &done); err != nil {
		return Delivery{}, err
	}
	d.DoneAt = parseStoredTime(done)
	return d, nil
}
