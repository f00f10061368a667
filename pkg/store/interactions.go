package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors of Receive and QueueAnswer; pkg/peer turns them into reason codes.
var (
	ErrDuplicate          = errors.New("message already received")
	ErrIDReused           = errors.New("message id already used for a different message")
	ErrInteractionReused  = errors.New("interaction id already used by this peer")
	ErrUnknownInteraction = errors.New("no such interaction")
	ErrAlreadyAnswered    = errors.New("interaction already answered")
)

// Interaction states. An inbound task is new until it is answered or refused; an outbound
// task waits for the peer's answer.
const (
	StateNew      = "new"
	StateWaiting  = "waiting"
	StateAnswered = "answered"
	StateRefused  = "refused"
)

// Interaction is one task and its answer, in either direction.
type Interaction struct {
	ID          string     `json:"interaction"`
	Peer        string     `json:"peer"`
	Direction   string     `json:"direction"` // "in": the peer asked this node; "out": this node asked
	State       string     `json:"state"`
	Text        string     `json:"text"`
	TaskMsgID   string     `json:"task_msg_id"`
	SentAt      time.Time  `json:"sent_at"`
	CreatedAt   time.Time  `json:"created_at"`
	ReplyAddr   string     `json:"reply_addr,omitempty"`
	AnswerType  string     `json:"answer_type,omitempty"` // "reply" or "refusal"
	AnswerText  string     `json:"answer_text,omitempty"`
	AnswerCode  string     `json:"answer_code,omitempty"`
	AnswerUntil time.Time  `json:"answer_until,omitzero"`
	AnsweredAt  time.Time  `json:"answered_at,omitzero"`
	Delivery    []Delivery `json:"delivery,omitempty"` // this node's messages of the interaction
}

// Delivery is the outbox state of one message this node sends.
type Delivery struct {
	MsgID     string    `json:"msg_id"`
	Type      string    `json:"type"`
	State     string    `json:"state"` // pending, delivered, failed
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	DoneAt    time.Time `json:"done_at,omitzero"`
}

// Incoming is a verified message from a peer, ready to be stored.
type Incoming struct {
	Type        string // task, reply, refusal
	MsgID       string
	Peer        string // the sender's aid, as authenticated by TLS and the signature
	Interaction string
	Text        string
	Code        string
	Until       time.Time
	Sent        time.Time
	ContentHash [32]byte // digest of the content without the sent time
	Raw         []byte   // the signed message, encoding and signature
	Digest      [32]byte // SHA-256 of Raw
	ReplyAddr   string   // task: where answers go when the peer is not in the peers table
	Src         string   // the source address as admission counts it (rate limits after a restart)
	// Quota, when set, refuses a task that would pass it (the sender is a stranger).
	Quota *IntakeQuota
}

// Receive stores a verified message and its evidence entry in one transaction: a task
// becomes a new inbox row; a reply or refusal completes an outbound interaction. A message
// id seen before gives ErrDuplicate (same content) or ErrIDReused, and stores nothing.
func (s *Store) Receive(ctx context.Context, signer Signer, in Incoming) (Interaction, error) {
	var out Interaction
	err := s.writeTx(ctx, "receive "+in.Type, func(ctx context.Context, tx *sql.Tx) error {
		var have []byte
		err := tx.QueryRowContext(ctx, `SELECT content_hash FROM messages WHERE direction = 'in' AND peer = ? AND msg_id = ?`,
			in.Peer, in.MsgID).Scan(&have)
		switch {
		case err == nil && string(have) == string(in.ContentHash[:]):
			return ErrDuplicate
		case err == nil:
			return ErrIDReused
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("receive %s: %w", in.Type, err)
		}
		now := s.now()
		switch in.Type {
		case "task":
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM interactions WHERE peer = ? AND interaction = ? AND direction = 'in'`,
				in.Peer, in.Interaction).Scan(&n); err != nil {
				return fmt.Errorf("receive task: %w", err)
			}
			if n > 0 {
				return ErrInteractionReused
			}
			if in.Quota != nil {
				if err := checkQuota(ctx, tx, in.Peer, in.Text, *in.Quota); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO interactions
				(peer, interaction, direction, state, text, task_msg_id, sent_at, created_at, created_unix, reply_addr)
				VALUES (?, ?, 'in', 'new', ?, ?, ?, ?, ?, ?)`,
				in.Peer, in.Interaction, in.Text, in.MsgID, formatTime(in.Sent), formatTime(now), now.UnixNano(), in.ReplyAddr); err != nil {
				return fmt.Errorf("receive task: %w", err)
			}
		case "reply", "refusal":
			var answered string
			err := tx.QueryRowContext(ctx, `SELECT answer_type FROM interactions WHERE peer = ? AND interaction = ? AND direction = 'out'`,
				in.Peer, in.Interaction).Scan(&answered)
			if errors.Is(err, sql.ErrNoRows) {
				return ErrUnknownInteraction
			}
			if err != nil {
				return fmt.Errorf("receive %s: %w", in.Type, err)
			}
			if answered != "" {
				return ErrAlreadyAnswered
			}
			if err := setAnswer(ctx, tx, in.Peer, in.Interaction, "out", in.Type, in.Text, in.Code, in.Until, now); err != nil {
				return err
			}
		default:
			return fmt.Errorf("receive: unknown message type %q", in.Type)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages(direction, peer, msg_id, type, interaction, content_hash, raw, at, src, at_unix)
			VALUES ('in', ?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.Peer, in.MsgID, in.Type, in.Interaction, in.ContentHash[:], in.Raw, formatTime(now), in.Src, now.UnixNano()); err != nil {
			return fmt.Errorf("receive %s: %w", in.Type, err)
		}
		details := contentDetails(map[string]any{
			"msg_id": in.MsgID, "sent": formatTime(in.Sent), "msg_sha256": hex.EncodeToString(in.Digest[:]),
		}, in.Text, in.Code, in.Until)
		if _, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: in.Type + "_received", Peer: in.Peer, Interaction: in.Interaction, Details: details}); err != nil {
			return err
		}
		out, err = interactionTx(ctx, tx, in.Peer, in.Interaction, dirOf(in.Type, true))
		return err
	})
	return out, err
}

// dirOf is the direction of the interaction a message belongs to: a task received opens
// an inbound interaction; an answer received completes an outbound one.
func dirOf(typ string, received bool) string {
	if (typ == "task") == received {
		return "in"
	}
	return "out"
}

func setAnswer(ctx context.Context, tx *sql.Tx, peer, interaction, dir, typ, text, code string, until, now time.Time) error {
	state := StateAnswered
	if typ == "refusal" {
		state = StateRefused
	}
	_, err := tx.ExecContext(ctx, `UPDATE interactions SET state = ?, answer_type = ?, answer_text = ?, answer_code = ?,
		answer_until = ?, answered_at = ? WHERE peer = ? AND interaction = ? AND direction = ?`,
		state, typ, text, code, formatOptTime(until), formatTime(now), peer, interaction, dir)
	if err != nil {
		return fmt.Errorf("record %s: %w", typ, err)
	}
	return nil
}

// contentDetails adds to d what the evidence records of a message's content: the size of its
// text (never the text, which stays in the interactions table), its code and until.
func contentDetails(d map[string]any, text, code string, until time.Time) map[string]any {
	if text != "" {
		d["text_bytes"] = len(text)
	}
	if code != "" {
		d["code"] = code
	}
	if !until.IsZero() {
		d["until"] = formatTime(until)
	}
	return d
}

// formatOptTime is formatTime, or "" for the zero time (an optional time column).
func formatOptTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return formatTime(t)
}

// Outgoing is a message this node sends; it is queued in the outbox and signed at each
// delivery attempt.
type Outgoing struct {
	Type        string // task, reply, refusal
	MsgID       string
	Peer        string
	Interaction string
	Text        string
	Code        string
	Until       time.Time
}

// Queue records an outgoing message with its evidence entry (task_sent, reply_sent,
// refusal_sent) and puts it in the outbox, all in one transaction. A task opens an
// outbound interaction; an answer needs an inbound interaction that is still new
// (ErrUnknownInteraction, ErrAlreadyAnswered otherwise).
func (s *Store) Queue(ctx context.Context, signer Signer, o Outgoing) (Interaction, error) {
	var out Interaction
	err := s.writeTx(ctx, "queue "+o.Type, func(ctx context.Context, tx *sql.Tx) error {
		now := s.now()
		switch o.Type {
		case "task":
			if _, err := tx.ExecContext(ctx, `INSERT INTO interactions
				(peer, interaction, direction, state, text, task_msg_id, sent_at, created_at, created_unix)
				VALUES (?, ?, 'out', 'waiting', ?, ?, ?, ?, ?)`,
				o.Peer, o.Interaction, o.Text, o.MsgID, formatTime(now), formatTime(now), now.UnixNano()); err != nil {
				if strings.Contains(err.Error(), "UNIQUE") {
					return ErrInteractionReused
				}
				return fmt.Errorf("queue task: %w", err)
			}
		case "reply", "refusal":
			var answered string
			err := tx.QueryRowContext(ctx, `SELECT answer_type FROM interactions WHERE peer = ? AND interaction = ? AND direction = 'in'`,
				o.Peer, o.Interaction).Scan(&answered)
			if errors.Is(err, sql.ErrNoRows) {
				return ErrUnknownInteraction
			}
			if err != nil {
				return fmt.Errorf("queue %s: %w", o.Type, err)
			}
			if answered != "" {
				return ErrAlreadyAnswered
			}
			if err := setAnswer(ctx, tx, o.Peer, o.Interaction, "in", o.Type, o.Text, o.Code, o.Until, now); err != nil {
				return err
			}
		default:
			return fmt.Errorf("queue: unknown message type %q", o.Type)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO outbox(peer, msg_id, type, interaction, text, code, until, state, next_attempt_unix, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
			o.Peer, o.MsgID, o.Type, o.Interaction, o.Text, o.Code, formatOptTime(o.Until), now.UnixNano(), formatTime(now)); err != nil {
			return fmt.Errorf("queue %s: %w", o.Type, err)
		}
		details := contentDetails(map[string]any{"msg_id": o.MsgID}, o.Text, o.Code, o.Until)
		if _, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: o.Type + "_sent", Peer: o.Peer, Interaction: o.Interaction, Details: details}); err != nil {
			return err
		}
		var err error
		out, err = interactionTx(ctx, tx, o.Peer, o.Interaction, dirOf(o.Type, false))
		return err
	})
	return out, err
}

const interactionCols = `peer, interaction, direction, state, text, task_msg_id, sent_at, created_at, reply_addr,
	answer_type, answer_text, answer_code, answer_until, answered_at`

type queryer interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func scanInteractions(ctx context.Context, q queryer, where string, args ...any) ([]Interaction, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+interactionCols+` FROM interactions `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read interactions: %w", err)
	}
	var out []Interaction
	for rows.Next() {
		var it Interaction
		var sent, created, until, answered string
		if err := rows.Scan(&it.Peer, &it.ID, &it.Direction, &it.State, &it.Text, &it.TaskMsgID, &sent, &created, &it.ReplyAddr,
			&it.AnswerType, &it.AnswerText, &it.AnswerCode, &until, &answered); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read interactions: %w", err)
		}
		it.SentAt, it.CreatedAt = parseStoredTime(sent), parseStoredTime(created)
		it.AnswerUntil, it.AnsweredAt = parseStoredTime(until), parseStoredTime(answered)
		out = append(out, it)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("read interactions: %w", err)
	}
	for i := range out {
		d, err := deliveries(ctx, q, out[i].Peer, out[i].ID, out[i].Direction)
		if err != nil {
			return nil, err
		}
		out[i].Delivery = d
	}
	return out, nil
}

// deliveries lists this node's messages of an interaction: the task for an outbound one,
// the answer for an inbound one.
func deliveries(ctx context.Context, q queryer, peer, interaction, dir string) ([]Delivery, error) {
	types := "'task'"
	if dir == "in" {
		types = "'reply', 'refusal'"
	}
	rows, err := q.QueryContext(ctx, `SELECT `+deliveryCols+` FROM outbox
		WHERE peer = ? AND interaction = ? AND type IN (`+types+`) ORDER BY id`, peer, interaction)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

func interactionTx(ctx context.Context, q queryer, peer, interaction, dir string) (Interaction, error) {
	list, err := scanInteractions(ctx, q, `WHERE peer = ? AND interaction = ? AND direction = ?`, peer, interaction, dir)
	if err != nil {
		return Interaction{}, err
	}
	if len(list) == 0 {
		return Interaction{}, fmt.Errorf("interaction %s: %w", interaction, ErrNotFound)
	}
	return list[0], nil
}

// InboxOptions selects inbound interactions.
type InboxOptions struct {
	State string // "" for every state
	Limit int    // 0 for no limit
	// Sent lists the tasks this node sent (direction out) instead of those it received.
	Sent bool
}

// Inbox lists inbound tasks (or, with Sent, outbound ones), oldest first.
func (s *Store) Inbox(ctx context.Context, o InboxOptions) ([]Interaction, error) {
	where := `WHERE direction = 'in'`
	if o.Sent {
		where = `WHERE direction = 'out'`
	}
	var args []any
	if o.State != "" {
		where += ` AND state = ?`
		args = append(args, o.State)
	}
	where += ` ORDER BY created_unix, id`
	if o.Limit > 0 {
		where += ` LIMIT ?`
		args = append(args, o.Limit)
	}
	out, err := scanInteractions(ctx, s.db, where, args...)
	if out == nil && err == nil {
		out = []Interaction{}
	}
	return out, err
}

// Interactions returns every interaction with this id, in both directions.
func (s *Store) Interactions(ctx context.Context, id string) ([]Interaction, error) {
	return scanInteractions(ctx, s.db, `WHERE interaction = ? ORDER BY created_unix, id`, id)
}

// Interaction returns one interaction.
func (s *Store) Interaction(ctx context.Context, peer, id, dir string) (Interaction, error) {
	return interactionTx(ctx, s.db, peer, id, dir)
}
