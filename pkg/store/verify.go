package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
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
// checkpoint. Receipts: a turn_completed entry whose details carry a receipts digest must
// have its run's receipts row (receipts.go), recorded with that digest, whose body hashes to
// it, so receipts changed or removed after the fact name their entry. It returns a
// *ChainError naming the first entry that is not proven — for a checkpoint that fails, the
// first entry it was to vouch for; other errors are database failures. Signatures are checked in batches (sigbatch.go) on every core while the rows
// stream in; memory stays bounded by a few batches, however long the chain.
func (s *Store) Verify(ctx context.Context, pub ed25519.PublicKey) (VerifyResult, error) {
	var res VerifyResult
	if len(pub) != ed25519.PublicKeySize {
		return res, fmt.Errorf("verify evidence: public key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	bv, err := newBatchVerifier(pub)
	if err != nil {
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	// One read transaction on one connection holds both cursors in one snapshot. A plain
	// BEGIN: the store's own transactions begin IMMEDIATE, which would hold off every append.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`); err != nil {
			// Never hand the pool a connection still inside a read transaction (its snapshot
			// would hold off every WAL checkpoint): this one is closed instead.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	rows, err := conn.QueryContext(ctx, `SELECT `+entryColumns+` FROM evidence ORDER BY seq`)
	if err != nil {
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	defer rows.Close()
	// The checkpoints stream beside the entries (a join would look one up for every entry).
	cps, err := conn.QueryContext(ctx, `SELECT seq, time, hash, sig FROM evidence_checkpoints ORDER BY seq`)
	if err != nil {
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	defer cps.Close()
	cp := checkpointCursor{rows: cps}
	// The receipts rows too, in the same snapshot: an entry that names a digest is proven
	// only with its receipts.
	rcs, err := conn.QueryContext(ctx, `SELECT seq, run, digest, body FROM receipts ORDER BY seq`)
	if err != nil {
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	defer rcs.Close()
	rc := receiptsCursor{rows: rcs}

	sigs := newSigChecker(bv)
	var (
		first     *failure // the earliest failure found in the scan itself
		prevSeq   int64
		prevHash  [32]byte
		coveredTo int64    // the last entry vouched for by a signature (its own or a checkpoint's)
		covered   [32]byte // its hash: Head when a later failure leaves the chain proven up to there
		// The blob columns are read without a copy; what a signature check keeps is copied.
		r                     rawEntry
		prevRaw, hRaw, sigRaw sql.RawBytes
	)
	for rows.Next() {
		if err := rows.Scan(&r.seq, &r.timeText, &r.unixNano, &r.kind, &r.peer, &r.interaction, &r.details,
			&prevRaw, &hRaw, &sigRaw); err != nil {
			sigs.wait()
			return res, fmt.Errorf("verify evidence: %w", err)
		}
		r.prevHash, r.hash, r.sig = prevRaw, hRaw, sigRaw
		if err := cp.seek(r.seq); err != nil {
			sigs.wait()
			return res, fmt.Errorf("verify evidence: checkpoints: %w", err)
		}
		if cerr := checkEntry(r, prevSeq, prevHash); cerr != nil {
			// Entries before this one are proven only as far as a signature reached.
			first = &failure{blame: cerr.Seq, verified: coveredTo, head: covered, reason: cerr.Reason}
			break
		}
		if claim, ok := claimOf(r.kind, r.details); ok {
			if err := rc.seek(r.seq); err != nil {
				sigs.wait()
				return res, fmt.Errorf("verify evidence: receipts: %w", err)
			}
			if why := rc.check(r.seq, claim); why != "" {
				first = &failure{blame: r.seq, verified: coveredTo, head: covered, reason: why}
				break
			}
		}
		hash := [32]byte(r.hash)
		switch len(r.sig) {
		case ed25519.SignatureSize:
			sigs.check(sigJob{blame: r.seq, verified: coveredTo, head: covered, msg: hash[:], sig: bytes.Clone(r.sig)})
			coveredTo, covered = r.seq, hash
		case 0:
		default:
			first = &failure{blame: r.seq, verified: coveredTo, head: covered, reason: fmt.Sprintf("malformed: sig %d bytes, want 0 or 64", len(r.sig))}
		}
		if first != nil {
			break
		}
		if cp.ok && cp.seq == r.seq {
			if len(cp.hash) != 32 || [32]byte(cp.hash) != hash {
				first = &failure{blame: coveredTo + 1, verified: coveredTo, head: covered,
					reason: fmt.Sprintf("the checkpoint at entry %d does not sign this chain (its hash %s…, the entry's %s…)", r.seq, hex.EncodeToString(cp.hash[:min(4, len(cp.hash))]), hex.EncodeToString(r.hash[:4]))}
				break
			}
			sigs.check(sigJob{blame: coveredTo + 1, verified: coveredTo, head: covered, checkpoint: r.seq,
				msg: CheckpointEncoding(r.seq, string(cp.time), hash), sig: bytes.Clone(cp.sig)})
			coveredTo, covered = r.seq, hash
			res.Checkpoints++
		}
		prevSeq, prevHash = r.seq, hash
	}
	if err := rows.Err(); err != nil && first == nil {
		sigs.wait()
		return res, fmt.Errorf("verify evidence: %w", err)
	}
	if first == nil && coveredTo < prevSeq {
		first = &failure{blame: coveredTo + 1, verified: coveredTo, head: covered, reason: "not vouched for by a signed checkpoint (none follows it)"}
	}
	if f := sigs.wait(); f != nil && (first == nil || f.blame < first.blame) {
		first = f
	}
	if first != nil {
		res.Entries = first.verified
		res.Head = first.head
		return res, &ChainError{Seq: first.blame, Reason: first.reason}
	}
	res.Entries = prevSeq
	res.Head = prevHash
	return res, nil
}

// checkpointCursor walks the checkpoints in sequence order beside the entries.
type checkpointCursor struct {
	rows            *sql.Rows
	ok              bool // the cursor is on a checkpoint (not before the first nor past the last)
	seq             int64
	time, hash, sig sql.RawBytes
	done            bool
}

// seek moves to the first checkpoint at or after seq. A checkpoint of no entry is passed
// over, as it vouches for nothing.
func (c *checkpointCursor) seek(seq int64) error {
	for !c.done && (!c.ok || c.seq < seq) {
		if !c.rows.Next() {
			c.ok, c.done = false, true
			return c.rows.Err()
		}
		if err := c.rows.Scan(&c.seq, &c.time, &c.hash, &c.sig); err != nil {
			return err
		}
		c.ok = true
	}
	return nil
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

// failure is a reason the chain is not proven from entry blame on; verified entries precede
// it, the last with hash head.
type failure struct {
	blame, verified int64
	head            [32]byte
	reason          string
}

// sigBatch is how many signatures one batch verification takes: large enough that the shared
// doublings of the multi-scalar multiplication cost little per signature, small enough that
// both cores get batches of a short chain and memory stays bounded for a long one.
const sigBatch = 64

// sigChecker verifies signatures in batches on every core while the rows stream in; wait
// returns the failure with the lowest blame.
type sigChecker struct {
	v     *batchVerifier
	batch []sigJob      // being filled by the scan
	jobs  chan []sigJob // full batches, at most two per core waiting
	wg    sync.WaitGroup
	mu    sync.Mutex
	bad   *failure
}

// sigJob is one signature to check: if it fails, entries from blame on are not proven, and
// the chain is proven up to entry verified, whose hash is head.
type sigJob struct {
	blame, verified int64
	head            [32]byte
	checkpoint      int64 // the checkpoint's entry, or 0 for an entry's own signature
	msg, sig        []byte
}

func (j sigJob) failure() *failure {
	reason := "signature invalid"
	if j.checkpoint != 0 {
		reason = fmt.Sprintf("the checkpoint at entry %d: signature invalid", j.checkpoint)
	}
	return &failure{blame: j.blame, verified: j.verified, head: j.head, reason: reason}
}

func newSigChecker(v *batchVerifier) *sigChecker {
	workers := runtime.GOMAXPROCS(0)
	c := &sigChecker{v: v, batch: make([]sigJob, 0, sigBatch), jobs: make(chan []sigJob, 2*workers)}
	for range workers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for batch := range c.jobs {
				for i, ok := range c.v.valid(batch) {
					if !ok {
						c.fail(batch[i]) // the first of the batch: blames rise with i
						break
					}
				}
			}
		}()
	}
	return c
}

func (c *sigChecker) fail(j sigJob) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bad == nil || j.blame < c.bad.blame {
		c.bad = j.failure()
	}
}

// check queues j; the checker keeps its msg and sig.
func (c *sigChecker) check(j sigJob) {
	c.batch = append(c.batch, j)
	if len(c.batch) == sigBatch {
		c.jobs <- c.batch
		c.batch = make([]sigJob, 0, sigBatch)
	}
}

func (c *sigChecker) wait() *failure {
	if len(c.batch) > 0 {
		c.jobs <- c.batch
		c.batch = nil
	}
	close(c.jobs)
	c.wg.Wait()
	return c.bad
}
