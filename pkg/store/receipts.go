package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"anet.dev/anet/pkg/receipt"
)

// Receipts of runs (H1–H7, R1, K1): what one run reached, a receipt per tunnel and per model
// request (pkg/receipt), kept beside the run's turn_completed entry instead of in it, so the
// chain stays small. The entry's details carry the set's digest and counts under "receipts"
// ({"digest":"sha256:…","tunnels":N,"model":N,"refused":N,"dropped":N}); the row is written in
// the entry's transaction (PutReceiptsTx), so a crash keeps both or neither, and Verify checks
// that every entry that names a digest has its row and that the row's body hashes to it.
//
// A row: run (the run id, the details' "run"), peer and interaction (the entry's), seq (the
// entry's sequence number), digest (receipt.Digest of body) and body (receipt.Encode's bytes,
// stored verbatim: the digest is over exactly them).
var receiptsSchema = []string{
	`CREATE TABLE receipts (
		run         TEXT    PRIMARY KEY,
		peer        TEXT    NOT NULL,
		interaction TEXT    NOT NULL,
		seq         INTEGER NOT NULL UNIQUE CHECK (seq >= 1),
		digest      TEXT    NOT NULL,
		body        BLOB    NOT NULL
	)`,
	`CREATE INDEX receipts_by_interaction ON receipts(peer, interaction)`,
	// Receipts are evidence: like the chain, a bug that changes one fails loudly (someone with
	// the file can drop these; Verify catches that).
	`CREATE TRIGGER receipts_no_update BEFORE UPDATE ON receipts
		BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END`,
	`CREATE TRIGGER receipts_no_delete BEFORE DELETE ON receipts
		BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END`,
}

// maxReceiptsLen bounds a stored set. A valid one (receipt.MaxPerKind of each kind, every text
// at receipt.MaxTextBytes) stays well under it; the bound keeps a bug from growing the file.
const maxReceiptsLen = 4 << 20

// ErrNoReceipts: the store holds no receipts for the run.
var ErrNoReceipts = errors.New("no receipts stored")

// ReceiptsInput is one run's receipts, for PutReceiptsTx.
type ReceiptsInput struct {
	Run, Peer, Interaction string
	// Seq is the run's turn_completed entry, appended in the same transaction.
	Seq int64
	// Body is receipt.Encode's output, stored verbatim.
	Body []byte
}

// StoredReceipts is a run's row.
type StoredReceipts struct {
	Run, Peer, Interaction string
	Seq                    int64
	Digest                 string
	Body                   []byte
}

// PutReceiptsTx stores a run's receipts inside the caller's transaction (the one that appends
// the run's turn_completed entry) and returns their digest, which the entry's details carry.
// tx must be a read-write transaction begun on s.DB().
func (s *Store) PutReceiptsTx(ctx context.Context, tx *sql.Tx, in ReceiptsInput) (digest string, err error) {
	switch {
	case in.Run == "" || len(in.Run) > maxInteractionLen:
		return "", fmt.Errorf("store receipts: run %q: want 1 to %d bytes", in.Run, maxInteractionLen)
	case in.Seq < 1:
		return "", fmt.Errorf("store receipts of run %s: seq %d: want the run's entry", in.Run, in.Seq)
	case len(in.Body) == 0 || len(in.Body) > maxReceiptsLen:
		return "", fmt.Errorf("store receipts of run %s: body %d bytes: want 1 to %d", in.Run, len(in.Body), maxReceiptsLen)
	case !json.Valid(in.Body) || in.Body[0] != '{':
		return "", fmt.Errorf("store receipts of run %s: body: not a JSON object", in.Run)
	}
	if in.Peer != "" {
		if err := validPeer(in.Peer); err != nil {
			return "", fmt.Errorf("store receipts of run %s: %w", in.Run, err)
		}
	}
	if err := validInteraction(in.Interaction); err != nil {
		return "", fmt.Errorf("store receipts of run %s: %w", in.Run, err)
	}
	digest = receipt.Digest(in.Body)
	if _, err := s.txExec(ctx, tx, `INSERT INTO receipts (run, peer, interaction, seq, digest, body) VALUES (?, ?, ?, ?, ?, ?)`,
		in.Run, in.Peer, in.Interaction, in.Seq, digest, in.Body); err != nil {
		// A full disk is named as such (disk_full), here as on the store's own writes.
		return "", fmt.Errorf("store receipts of run %s: %w", in.Run, s.noteWrite(err))
	}
	return digest, nil
}

// Receipts returns a run's stored receipts: the body as stored and the digest recorded with
// it. A run without receipts gives ErrNoReceipts. The body is what the row holds now: whoever
// relies on it compares receipt.Digest(body) with the digest its entry carries (Verify does).
func (s *Store) Receipts(ctx context.Context, run string) (body []byte, digest string, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT body, digest FROM receipts WHERE run = ?`, run).Scan(&body, &digest)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", fmt.Errorf("receipts of run %s: %w", run, ErrNoReceipts)
	}
	if err != nil {
		return nil, "", fmt.Errorf("receipts of run %s: %w", run, err)
	}
	return body, digest, nil
}

// ReceiptsOf returns the receipts of one interaction's runs, keyed by run (`anet show`).
func (s *Store) ReceiptsOf(ctx context.Context, peer, interaction string) (map[string]StoredReceipts, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run, peer, interaction, seq, digest, body FROM receipts
		WHERE peer = ? AND interaction = ? ORDER BY seq`, peer, interaction)
	if err != nil {
		return nil, fmt.Errorf("receipts of interaction %s: %w", interaction, err)
	}
	defer rows.Close()
	out := map[string]StoredReceipts{}
	for rows.Next() {
		var r StoredReceipts
		if err := rows.Scan(&r.Run, &r.Peer, &r.Interaction, &r.Seq, &r.Digest, &r.Body); err != nil {
			return nil, fmt.Errorf("receipts of interaction %s: %w", interaction, err)
		}
		out[r.Run] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("receipts of interaction %s: %w", interaction, err)
	}
	return out, nil
}

// receiptsClaim is what an entry's details say of its run's receipts.
type receiptsClaim struct {
	run, digest string
}

// claimOf reads the receipts digest a turn_completed entry's details carry; ok is false for an
// entry that names none (a run without an endpoint, or one written before receipts).
func claimOf(kind, details string) (c receiptsClaim, ok bool) {
	if kind != "turn_completed" {
		return c, false
	}
	var d struct {
		Run      string `json:"run"`
		Receipts *struct {
			Digest string `json:"digest"`
		} `json:"receipts"`
	}
	if json.Unmarshal([]byte(details), &d) != nil || d.Receipts == nil || d.Receipts.Digest == "" {
		return c, false
	}
	return receiptsClaim{run: d.Run, digest: d.Receipts.Digest}, true
}

// receiptsCursor walks the receipts rows in sequence order beside the entries (Verify).
type receiptsCursor struct {
	rows   *sql.Rows
	ok     bool
	seq    int64
	run    string
	digest string
	body   sql.RawBytes
	done   bool
}

// seek moves to the first row at or after seq.
func (c *receiptsCursor) seek(seq int64) error {
	for !c.done && (!c.ok || c.seq < seq) {
		if !c.rows.Next() {
			c.ok, c.done = false, true
			return c.rows.Err()
		}
		if err := c.rows.Scan(&c.seq, &c.run, &c.digest, &c.body); err != nil {
			return err
		}
		c.ok = true
	}
	return nil
}

// check reports why the entry at seq, which claims cl, is not backed by its receipts ("" when
// it is): the row must be the entry's, of its run, with the claimed digest, and its body must
// hash to it.
func (c *receiptsCursor) check(seq int64, cl receiptsClaim) string {
	if !c.ok || c.seq != seq || c.run != cl.run {
		return fmt.Sprintf("receipts of run %s are missing", cl.run)
	}
	if c.digest != cl.digest || receipt.Digest(c.body) != cl.digest {
		return fmt.Sprintf("receipts of run %s do not match their digest", cl.run)
	}
	return ""
}
