package store

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"sync"
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
	// Checkpoints is how many signed checkpoints verified.
	Checkpoints int64
	// Head is the hash of the last verified entry (zero for an empty chain). Recording it
	// outside the store is what detects a later truncation.
	Head [32]byte
}

// Verify reads the chain in sequence order, in one read snapshot, and checks for every
// entry: the sequence continues without a gap from 1, prev_hash equals the previous entry's
// hash, the hash recomputed from the canonical encoding equals the stored one, and the
// indexed unix_nano agrees with the signed time. Signatures: an entry with its own (chains
// written before checkpoints) must verify with pub; every checkpoint must name an entry's
// hash and verify with pub; and an entry without its own signature must be followed by a
// checkpoint. It returns a *ChainError naming the first entry that is not proven — for a
// checkpoint that fails, the first entry it was to vouch for; other errors are database
// failures. Signatures are checked on every core while the rows stream in.
func (s *Store) Verify(ctx context.Context, pub ed25519.PublicKey) (VerifyResult, error) {
	var res VerifyResult
	if len(pub) != ed25519.PublicKeySize {
		return res, fmt.Errorf("verify evidence: public key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT e.seq, e.time, e.unix_nano, e.kind, e.peer, e.interaction, e.details,
		e.prev_hash, e.hash, e.sig, c.time, c.hash, c.sig
		FROM evidence e LEFT JOIN evidence_checkpoints c ON c.seq = e.seq ORDER BY e.seq`)
	if err != nil {
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	defer rows.Close()

	sigs := newSigChecker(pub)
	var (
		first     *failure // the earliest failure found in the scan itself
		prevSeq   int64
		prevHash  [32]byte
		coveredTo int64 // the last entry vouched for by a signature (its own or a checkpoint's)
		// heads holds the hash at each entry a signature vouches for: what Head is when a
		// later failure leaves the chain proven up to there.
		heads = map[int64][32]byte{}
	)
	for rows.Next() {
		var (
			r             rawEntry
			cpTime        *string
			cpHash, cpSig []byte
		)
		if err := rows.Scan(&r.seq, &r.timeText, &r.unixNano, &r.kind, &r.peer, &r.interaction, &r.details,
			&r.prevHash, &r.hash, &r.sig, &cpTime, &cpHash, &cpSig); err != nil {
			sigs.wait()
			return res, fmt.Errorf("verify evidence: %w", err)
		}
		if cerr := checkEntry(r, prevSeq, prevHash); cerr != nil {
			// Entries before this one are proven only as far as a signature reached.
			first = &failure{blame: cerr.Seq, verified: coveredTo, reason: cerr.Reason}
			break
		}
		hash := [32]byte(r.hash)
		switch len(r.sig) {
		case ed25519.SignatureSize:
			sigs.check(r.seq, r.seq, hash[:], r.sig, "signature invalid")
			coveredTo = r.seq
			heads[r.seq] = hash
		case 0:
		default:
			first = &failure{blame: r.seq, verified: coveredTo, reason: fmt.Sprintf("malformed: sig %d bytes, want 0 or 64", len(r.sig))}
		}
		if first != nil {
			break
		}
		if cpTime != nil {
			if len(cpHash) != 32 || [32]byte(cpHash) != hash {
				first = &failure{blame: coveredTo + 1, verified: coveredTo,
					reason: fmt.Sprintf("the checkpoint at entry %d does not sign this chain (its hash %s…, the entry's %s…)", r.seq, hex.EncodeToString(cpHash[:min(4, len(cpHash))]), hex.EncodeToString(r.hash[:4]))}
				break
			}
			sigs.check(coveredTo+1, r.seq, CheckpointEncoding(r.seq, *cpTime, hash), cpSig, fmt.Sprintf("the checkpoint at entry %d: signature invalid", r.seq))
			heads[r.seq] = hash
			coveredTo = r.seq
			res.Checkpoints++
		}
		prevSeq, prevHash = r.seq, hash
	}
	if err := rows.Err(); err != nil && first == nil {
		sigs.wait()
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	if first == nil && coveredTo < prevSeq {
		first = &failure{blame: coveredTo + 1, verified: coveredTo, reason: "not vouched for by a signed checkpoint (none follows it)"}
	}
	if f := sigs.wait(); f != nil && (first == nil || f.blame < first.blame) {
		first = f
	}
	if first != nil {
		res.Entries = first.verified
		res.Head = heads[first.verified]
		return res, &ChainError{Seq: first.blame, Reason: first.reason}
	}
	res.Entries = prevSeq
	res.Head = prevHash
	return res, nil
}

// checkEntry checks one entry against its predecessor: sequence, links, hash, time.
func checkEntry(r rawEntry, prevSeq int64, prevHash [32]byte) *ChainError {
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

// failure is a reason the chain is not proven from entry blame on; verified entries precede it.
type failure struct {
	blame, verified int64
	reason          string
}

// sigChecker verifies signatures on every core; wait returns the failure with the lowest
// blame.
type sigChecker struct {
	pub  ed25519.PublicKey
	jobs chan sigJob
	wg   sync.WaitGroup
	mu   sync.Mutex
	bad  *failure
}

type sigJob struct {
	blame, seq int64
	msg, sig   []byte
	reason     string
}

func newSigChecker(pub ed25519.PublicKey) *sigChecker {
	c := &sigChecker{pub: pub, jobs: make(chan sigJob, 256)}
	for range runtime.GOMAXPROCS(0) {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for j := range c.jobs {
				if len(j.sig) == ed25519.SignatureSize && ed25519.Verify(c.pub, j.msg, j.sig) {
					continue
				}
				c.mu.Lock()
				if c.bad == nil || j.blame < c.bad.blame {
					c.bad = &failure{blame: j.blame, verified: j.blame - 1, reason: j.reason}
				}
				c.mu.Unlock()
			}
		}()
	}
	return c
}

// check queues msg's signature: if it fails, entries from blame on are not proven.
func (c *sigChecker) check(blame, seq int64, msg, sig []byte, reason string) {
	c.jobs <- sigJob{blame: blame, seq: seq, msg: msg, sig: sig, reason: reason}
}

func (c *sigChecker) wait() *failure {
	close(c.jobs)
	c.wg.Wait()
	return c.bad
}
