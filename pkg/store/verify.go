package store

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// ChainError names the first entry that fails verification.
type ChainError struct {
	Seq    int64
	Reason string
}

func (e *ChainError) Error() string { return fmt.Sprintf("entry %d: %s", e.Seq, e.Reason) }

// VerifyResult summarises a chain that verified.
type VerifyResult struct {
	// Entries is how many entries verified (all of them when Verify returns no error).
	Entries int64
	// Head is the hash of the last verified entry (zero for an empty chain). Recording it
	// outside the store is what detects a later truncation.
	Head [32]byte
}

// Verify reads the chain in sequence order, in one read snapshot, and checks for every
// entry: the sequence continues without a gap from 1, prev_hash equals the previous entry's
// hash, the hash recomputed from the canonical encoding equals the stored one, the signature
// verifies with pub, and the indexed unix_nano agrees with the signed time. It stops at the
// first bad entry with a *ChainError; other errors are database failures.
func (s *Store) Verify(ctx context.Context, pub ed25519.PublicKey) (VerifyResult, error) {
	var res VerifyResult
	if len(pub) != ed25519.PublicKeySize {
		return res, fmt.Errorf("verify evidence: public key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+entryColumns+` FROM evidence ORDER BY seq`)
	if err != nil {
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	defer rows.Close()
	var prevSeq int64
	for rows.Next() {
		r, err := scanRaw(rows)
		if err != nil {
			return res, fmt.Errorf("verify evidence: %w", err)
		}
		if cerr := checkEntry(r, prevSeq, res.Head, pub); cerr != nil {
			return res, cerr
		}
		prevSeq = r.seq
		copy(res.Head[:], r.hash)
		res.Entries++
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	return res, nil
}

func checkEntry(r rawEntry, prevSeq int64, prevHash [32]byte, pub ed25519.PublicKey) *ChainError {
	bad := func(format string, a ...any) *ChainError {
		return &ChainError{Seq: r.seq, Reason: fmt.Sprintf(format, a...)}
	}
	if r.seq != prevSeq+1 {
		return bad("sequence gap: %d follows %d", r.seq, prevSeq)
	}
	if len(r.prevHash) != 32 || len(r.hash) != 32 {
		return bad("malformed: prev_hash %d bytes, hash %d bytes, want 32", len(r.prevHash), len(r.hash))
	}
	if [32]byte(r.prevHash) != prevHash {
		if r.seq == 1 {
			return bad("prev_hash of the first entry is not zero")
		}
		return bad("prev_hash does not match entry %d", prevSeq)
	}
	computed := sha256.Sum256(canonicalEncoding(r.seq, r.timeText, r.kind, r.peer, r.interaction, []byte(r.details), prevHash))
	if [32]byte(r.hash) != computed {
		return bad("hash mismatch (stored %s…, computed %s…)", hex.EncodeToString(r.hash[:4]), hex.EncodeToString(computed[:4]))
	}
	if len(r.sig) != ed25519.SignatureSize || !ed25519.Verify(pub, r.hash, r.sig) {
		return bad("signature invalid")
	}
	// The fields below are covered by the hash, so they can only be wrong if the node signed
	// them wrong; unix_nano is not, so it must agree with the signed text.
	t, err := time.Parse(time.RFC3339Nano, r.timeText)
	if err != nil || formatTime(t) != r.timeText {
		return bad("time %q is not canonical RFC 3339 UTC", r.timeText)
	}
	if t.UnixNano() != r.unixNano {
		return bad("time index mismatch (unix_nano %d, signed time %s)", r.unixNano, r.timeText)
	}
	return nil
}
