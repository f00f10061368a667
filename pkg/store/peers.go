package store

import (
	"anet.dev/anet/pkg/peeraddr"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is wrapped when a named peer, trust entry or interaction does not exist.
var ErrNotFound = errors.New("not found")

// Peer is a node this node can dial.
type Peer struct {
	AID     string    `json:"aid"`
	Addr    string    `json:"addr"`
	AddedAt time.Time `json:"added_at"`
	Trusted bool      `json:"trusted"`
}

// TrustEntry is a trusted peer.
type TrustEntry struct {
	AID     string    `json:"aid"`
	AddedAt time.Time `json:"added_at"`
}

// AddPeer records (or changes) the address of aid, with a peer_added evidence entry.
// addr is checked again here, under the rule the caller checked it with (pkg/peeraddr), so
// no path records an address the sender could only retry forever.
func (s *Store) AddPeer(ctx context.Context, signer Signer, aid, addr string) error {
	if err := validPeer(aid); err != nil {
		return fmt.Errorf("add peer: %w", err)
	}
	if err := peeraddr.Check("addr", addr); err != nil {
		return fmt.Errorf("add peer %s: %w", aid, err)
	}
	now := formatTime(s.now())
	return s.writeTx(ctx, "add peer", func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO peers(aid, addr, added_at) VALUES(?, ?, ?)
			ON CONFLICT(aid) DO UPDATE SET addr = excluded.addr`, aid, addr, now); err != nil {
			return fmt.Errorf("add peer %s: %w", aid, err)
		}
		_, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "peer_added", Peer: aid, Details: map[string]string{"addr": addr}})
		return err
	})
}

// RemovePeer deletes aid from the peers; ErrNotFound when it is not there.
func (s *Store) RemovePeer(ctx context.Context, signer Signer, aid string) error {
	return s.removeRow(ctx, signer, "peers", "peer_removed", aid)
}

// AddTrust marks aid as trusted, with a trust_added evidence entry.
func (s *Store) AddTrust(ctx context.Context, signer Signer, aid string) error {
	if err := validPeer(aid); err != nil {
		return fmt.Errorf("add trust: %w", err)
	}
	now := formatTime(s.now())
	return s.writeTx(ctx, "add trust", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO trust(aid, added_at) VALUES(?, ?) ON CONFLICT(aid) DO NOTHING`, aid, now)
		if err != nil {
			return fmt.Errorf("add trust %s: %w", aid, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // already trusted: nothing changed, nothing to record
		}
		_, err = s.AppendTx(ctx, tx, signer, EntryInput{Kind: "trust_added", Peer: aid})
		return err
	})
}

// RemoveTrust removes aid from the trust list; ErrNotFound when it is not there.
func (s *Store) RemoveTrust(ctx context.Context, signer Signer, aid string) error {
	return s.removeRow(ctx, signer, "trust", "trust_removed", aid)
}

func (s *Store) removeRow(ctx context.Context, signer Signer, table, kind, aid string) error {
	if err := validPeer(aid); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	return s.writeTx(ctx, kind, func(ctx context.Context, tx *sql.Tx) error {
		// table is one of two constants above, never caller input.
		res, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE aid = ?`, aid)
		if err != nil {
			return fmt.Errorf("%s %s: %w", kind, aid, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%s: %s: %w", table, aid, ErrNotFound)
		}
		_, err = s.AppendTx(ctx, tx, signer, EntryInput{Kind: kind, Peer: aid})
		return err
	})
}

// Peers lists the peers by aid, each with whether it is trusted.
func (s *Store) Peers(ctx context.Context) ([]Peer, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT p.aid, p.addr, p.added_at, t.aid IS NOT NULL
		FROM peers p LEFT JOIN trust t ON t.aid = p.aid ORDER BY p.aid`)
	if err != nil {
		return nil, fmt.Errorf("list peers: %w", err)
	}
	defer rows.Close()
	out := []Peer{}
	for rows.Next() {
		var p Peer
		var at string
		if err := rows.Scan(&p.AID, &p.Addr, &at, &p.Trusted); err != nil {
			return nil, fmt.Errorf("list peers: %w", err)
		}
		p.AddedAt = parseStoredTime(at)
		out = append(out, p)
	}
	return out, rows.Err()
}

// PeerAddr returns the address recorded for aid.
func (s *Store) PeerAddr(ctx context.Context, aid string) (string, bool, error) {
	var addr string
	err := s.db.QueryRowContext(ctx, `SELECT addr FROM peers WHERE aid = ?`, aid).Scan(&addr)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("peer %s: %w", aid, err)
	}
	return addr, true, nil
}

// TrustList lists the trusted aids.
func (s *Store) TrustList(ctx context.Context) ([]TrustEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT aid, added_at FROM trust ORDER BY aid`)
	if err != nil {
		return nil, fmt.Errorf("list trust: %w", err)
	}
	defer rows.Close()
	out := []TrustEntry{}
	for rows.Next() {
		var e TrustEntry
		var at string
		if err := rows.Scan(&e.AID, &at); err != nil {
			return nil, fmt.Errorf("list trust: %w", err)
		}
		e.AddedAt = parseStoredTime(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Trusted reports whether aid is in the trust list.
func (s *Store) Trusted(ctx context.Context, aid string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM trust WHERE aid = ?`, aid).Scan(&n); err != nil {
		return false, fmt.Errorf("trust %s: %w", aid, err)
	}
	return n > 0, nil
}

// parseStoredTime reads a time column this package wrote; "" gives the zero time.
func parseStoredTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
