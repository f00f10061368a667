package store

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"fmt"
	"strconv"
	"sync"

	"anet.dev/anet/pkg/canonical"
)

// Signed checkpoints, in the manner of Certificate Transparency's signed tree heads: entries
// appended since schema version 4 carry no signature of their own (an empty sig); every
// transaction that appends entries ends by signing its new head — sequence number, time and
// the head entry's hash — into evidence_checkpoints. The hash links make one checkpoint
// vouch for every entry up to its head, so a commit group of many entries costs one
// signature, and Verify checks one signature per group instead of one per entry. Entries
// written before (with their own signature) still verify as they were.
//
// Checkpoint encoding, whose Ed25519 signature is stored (the tag keeps a checkpoint signature
// from ever passing as an entry's, which signs a bare 32-byte hash):
//
//	"anet-evidence-checkpoint-v1"   ASCII, no length prefix
//	then, each with a 4-byte big-endian length:
//	  seq    decimal ASCII of the head entry's sequence number
//	  time   the head entry's time text
//	  hash   the head entry's 32-byte hash
const checkpointTag = "anet-evidence-checkpoint-v1"

// checkpointSchema rebuilds the evidence table so that sig may be empty (an entry vouched for
// by a checkpoint), keeping every row, index and append-only trigger, and adds the
// checkpoints table. SQLite cannot change a CHECK constraint in place.
var checkpointSchema = []string{
	`CREATE TABLE evidence_new (
		seq         INTEGER PRIMARY KEY CHECK (seq >= 1),
		time        TEXT    NOT NULL,
		unix_nano   INTEGER NOT NULL,
		kind        TEXT    NOT NULL,
		peer        TEXT    NOT NULL,
		interaction TEXT    NOT NULL,
		details     TEXT    NOT NULL,
		prev_hash   BLOB    NOT NULL CHECK (length(prev_hash) = 32),
		hash        BLOB    NOT NULL CHECK (length(hash) = 32),
		sig         BLOB    NOT NULL CHECK (length(sig) IN (0, 64))
	)`,
	`INSERT INTO evidence_new (seq, time, unix_nano, kind, peer, interaction, details, prev_hash, hash, sig)
		SELECT seq, time, unix_nano, kind, peer, interaction, details, prev_hash, hash, sig FROM evidence`,
	`DROP TABLE evidence`,
	`ALTER TABLE evidence_new RENAME TO evidence`,
	`CREATE INDEX evidence_kind_time ON evidence(kind, unix_nano)`,
	`CREATE INDEX evidence_peer_time ON evidence(peer, unix_nano)`,
	`CREATE INDEX evidence_time ON evidence(unix_nano)`,
	`CREATE TRIGGER evidence_no_update BEFORE UPDATE ON evidence
		BEGIN SELECT RAISE(ABORT, 'evidence is append-only'); END`,
	`CREATE TRIGGER evidence_no_delete BEFORE DELETE ON evidence
		BEGIN SELECT RAISE(ABORT, 'evidence is append-only'); END`,
	`CREATE TABLE evidence_checkpoints (
		seq  INTEGER PRIMARY KEY CHECK (seq >= 1),
		time TEXT    NOT NULL,
		hash BLOB    NOT NULL CHECK (length(hash) = 32),
		sig  BLOB    NOT NULL CHECK (length(sig) = 64)
	)`,
	`CREATE TRIGGER evidence_checkpoints_no_update BEFORE UPDATE ON evidence_checkpoints
		BEGIN SELECT RAISE(ABORT, 'evidence checkpoints are append-only'); END`,
	`CREATE TRIGGER evidence_checkpoints_no_delete BEFORE DELETE ON evidence_checkpoints
		BEGIN SELECT RAISE(ABORT, 'evidence checkpoints are append-only'); END`,
}

// CheckpointEncoding returns the bytes a checkpoint's signature is over.
func CheckpointEncoding(seq int64, timeText string, hash [32]byte) []byte {
	return canonical.Encode(checkpointTag, []byte(strconv.FormatInt(seq, 10)), []byte(timeText), hash[:])
}

// signCheckpoint signs the chain's head inside tx: the last step of every transaction that
// appended entries.
func (s *Store) signCheckpoint(ctx context.Context, tx *sql.Tx, signer Signer) error {
	var (
		seq      int64
		hash     []byte
		timeText string
	)
	if err := s.txQueryRow(ctx, tx, `SELECT seq, hash, time FROM evidence ORDER BY seq DESC LIMIT 1`, nil, &seq, &hash, &timeText); err != nil {
		return fmt.Errorf("checkpoint: read head: %w", err)
	}
	if len(hash) != 32 {
		return fmt.Errorf("checkpoint: head entry %d has a %d-byte hash", seq, len(hash))
	}
	msg := CheckpointEncoding(seq, timeText, [32]byte(hash))
	sig := signer.Sign(msg)
	// A signer whose private key is not its public key's would leave a chain that fails
	// every later verification. Ed25519 signing is deterministic, so one good signature
	// proves the pair: check a signer's first checkpoint, not every one.
	if !signerChecked(signer) {
		if !ed25519.Verify(signer.Public(), msg, sig) {
			return fmt.Errorf("checkpoint at entry %d: the signer produced an invalid signature", seq)
		}
		markChecked(signer)
	}
	if _, err := s.txExec(ctx, tx, `INSERT INTO evidence_checkpoints (seq, time, hash, sig) VALUES (?, ?, ?, ?)`,
		seq, timeText, hash, sig); err != nil {
		return fmt.Errorf("checkpoint at entry %d: %w", seq, err)
	}
	return nil
}

// checkedSigners holds the signers whose key pair a verified signature has proven.
var checkedSigners sync.Map

func signerChecked(s Signer) (ok bool) {
	// A signer that cannot be a map key (an unhashable type) is checked every time.
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, ok = checkedSigners.Load(s)
	return ok
}

func markChecked(s Signer) {
	defer func() { recover() }() // unhashable: never marked, so always checked
	checkedSigners.Store(s, true)
}
