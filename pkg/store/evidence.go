package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"anet.dev/anet/pkg/canonical"
)

// encodingTag starts the canonical encoding of every entry; it changes if the encoding does.
const encodingTag = "anet-evidence-v1"

// Limits on entry fields. Details are a record of a decision, not a copy of a task.
const (
	maxKindLen        = 64
	maxInteractionLen = 256
	maxDetailsLen     = 256 << 10
)

// metaEvidenceKey records the public key of the chain's first entry, so that a later Append
// with another key fails at once instead of leaving a chain that can never verify.
const metaEvidenceKey = "evidence_public_key"

// Signer signs evidence hashes with the node key. *identity.Identity satisfies it.
type Signer interface {
	Sign(msg []byte) []byte
	Public() ed25519.PublicKey
}

// Entry is one link of the evidence chain.
type Entry struct {
	Seq         int64
	Time        time.Time // UTC
	Kind        string
	Peer        string // aid, or ""
	Interaction string // or ""
	Details     json.RawMessage
	PrevHash    [32]byte
	Hash        [32]byte
	// Sig is the entry's own signature of its hash, in chains written before checkpoints;
	// empty when a signed checkpoint at or after the entry vouches for it.
	Sig []byte
}

// EntryInput is what a caller supplies; the store adds the sequence number, time and links.
type EntryInput struct {
	// Kind is non-empty, [a-z_]+, at most 64 bytes ("task_received", "turn_completed").
	Kind string
	// Peer is the aid of the peer concerned, or "".
	Peer string
	// Interaction identifies the task, or "". UTF-8 without control characters, ≤256 bytes.
	Interaction string
	// Details is marshalled with encoding/json and must give a JSON object (a
	// json.RawMessage is used as is, compacted). nil gives {}.
	Details any
}

// formatTime is the canonical time text.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// CanonicalEncoding returns the bytes whose SHA-256 is e's hash (see the package doc).
// Hash and Sig of e are not part of it.
func CanonicalEncoding(e Entry) []byte {
	return canonicalEncoding(e.Seq, formatTime(e.Time), e.Kind, e.Peer, e.Interaction, e.Details, e.PrevHash)
}

func canonicalEncoding(seq int64, timeText, kind, peer, interaction string, details []byte, prev [32]byte) []byte {
	return canonical.Encode(encodingTag, []byte(strconv.FormatInt(seq, 10)), []byte(timeText), []byte(kind), []byte(peer),
		[]byte(interaction), details, prev[:])
}

// ComputeHash returns SHA-256 of e's canonical encoding.
func ComputeHash(e Entry) [32]byte { return sha256.Sum256(CanonicalEncoding(e)) }

// normalizedInput is a validated EntryInput.
type normalizedInput struct {
	kind, peer, interaction string
	details                 []byte
}

func normalizeInput(in EntryInput) (normalizedInput, error) {
	if err := validKind(in.Kind); err != nil {
		return normalizedInput{}, err
	}
	if in.Peer != "" {
		if err := validPeer(in.Peer); err != nil {
			return normalizedInput{}, err
		}
	}
	if err := validInteraction(in.Interaction); err != nil {
		return normalizedInput{}, err
	}
	details, err := compactDetails(in.Details)
	if err != nil {
		return normalizedInput{}, err
	}
	return normalizedInput{kind: in.Kind, peer: in.Peer, interaction: in.Interaction, details: details}, nil
}

func validKind(kind string) error {
	if kind == "" {
		return errors.New("kind: must not be empty")
	}
	if len(kind) > maxKindLen {
		return fmt.Errorf("kind: longer than %d bytes", maxKindLen)
	}
	for i := 0; i < len(kind); i++ {
		if c := kind[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return fmt.Errorf("kind %q: must match [a-z_]+", kind)
		}
	}
	return nil
}

// validPeer checks the aid form (see pkg/identity: "an" + 52 chars of [a-z2-7]). The store
// does not import pkg/identity, and it only needs the form here: the chain records what
// the node saw.
func validPeer(peer string) error {
	if len(peer) != 54 || peer[:2] != "an" {
		return fmt.Errorf("peer %q: not an aid (\"an\" and 52 characters of [a-z2-7])", peer)
	}
	for i := 2; i < len(peer); i++ {
		if c := peer[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return fmt.Errorf("peer %q: not an aid (\"an\" and 52 characters of [a-z2-7])", peer)
		}
	}
	return nil
}

func validInteraction(s string) error {
	if len(s) > maxInteractionLen {
		return fmt.Errorf("interaction: longer than %d bytes", maxInteractionLen)
	}
	if !utf8.ValidString(s) {
		return errors.New("interaction: not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("interaction %q: contains a control character", s)
		}
	}
	return nil
}

// compactDetails marshals d and checks that it is a JSON object.
func compactDetails(d any) ([]byte, error) {
	if d == nil {
		return []byte("{}"), nil
	}
	var raw []byte
	switch v := d.(type) {
	case json.RawMessage:
		if len(v) == 0 {
			return []byte("{}"), nil
		}
		if !json.Valid(v) {
			return nil, errors.New("details: not valid JSON")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, fmt.Errorf("details: %w", err)
		}
		raw = buf.Bytes()
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("details: %w", err)
		}
		raw = b
	}
	if bytes.Equal(raw, []byte("null")) {
		return []byte("{}"), nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("details: must be a JSON object, got %s", jsonKind(raw))
	}
	if !utf8.Valid(raw) {
		return nil, errors.New("details: not valid UTF-8")
	}
	if len(raw) > maxDetailsLen {
		return nil, fmt.Errorf("details: %d bytes, more than the limit of %d", len(raw), maxDetailsLen)
	}
	return raw, nil
}

func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// Append adds an entry to the chain and returns it once it is committed (and, with
// synchronous=FULL, durable). Concurrent appends share one transaction, one checkpoint
// signature and one fsync (group.go), in the order they were called.
func (s *Store) Append(ctx context.Context, signer Signer, in EntryInput) (Entry, error) {
	var e Entry
	err := s.writeTx(ctx, "append evidence "+in.Kind, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		e, err = s.AppendTx(ctx, tx, signer, in)
		return err
	})
	if err != nil {
		return Entry{}, err
	}
	return e, nil
}

// AppendTx adds an entry inside the caller's transaction, so that a row of another table
// and its evidence are committed together or not at all. tx must be a read-write
// transaction begun on s.DB() (those start with BEGIN IMMEDIATE and so hold the write lock
// from the start). The entry exists only if the caller commits. In a transaction of the
// store's own (writeTx) the group's checkpoint signs it; in the caller's own, AppendTx signs
// a checkpoint of the entry at once.
func (s *Store) AppendTx(ctx context.Context, tx *sql.Tx, signer Signer, in EntryInput) (Entry, error) {
	n, err := normalizeInput(in)
	if err != nil {
		return Entry{}, fmt.Errorf("append evidence: %w", err)
	}
	pub := signer.Public()
	if len(pub) != ed25519.PublicKeySize {
		return Entry{}, fmt.Errorf("append evidence %s: signer public key has %d bytes, want %d", in.Kind, len(pub), ed25519.PublicKeySize)
	}
	if err := s.checkChainKey(ctx, tx, pub); err != nil {
		return Entry{}, fmt.Errorf("append evidence %s: %w", in.Kind, err)
	}

	var (
		lastSeq  int64
		lastHash []byte
	)
	err = s.txQueryRow(ctx, tx, `SELECT seq, hash FROM evidence ORDER BY seq DESC LIMIT 1`, nil, &lastSeq, &lastHash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		lastSeq, lastHash = 0, make([]byte, 32)
	case err != nil:
		return Entry{}, fmt.Errorf("append evidence %s: read head: %w", in.Kind, err)
	case len(lastHash) != 32:
		return Entry{}, fmt.Errorf("append evidence %s: head entry %d has a %d-byte hash", in.Kind, lastSeq, len(lastHash))
	}

	e := Entry{
		Seq:         lastSeq + 1,
		Time:        s.now().UTC().Round(0),
		Kind:        n.kind,
		Peer:        n.peer,
		Interaction: n.interaction,
		Details:     json.RawMessage(n.details),
	}
	copy(e.PrevHash[:], lastHash)
	e.Hash = ComputeHash(e)
	// No signature of its own: the checkpoint that ends the transaction signs the new head,
	// and the hash links carry that signature back to this entry.
	_, err = s.txExec(ctx, tx, `INSERT INTO evidence
		(seq, time, unix_nano, kind, peer, interaction, details, prev_hash, hash, sig)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.Seq, formatTime(e.Time), e.Time.UnixNano(), e.Kind, e.Peer, e.Interaction,
		string(e.Details), e.PrevHash[:], e.Hash[:], []byte{})
	if err != nil {
		return Entry{}, fmt.Errorf("append evidence %s: insert entry %d: %w", in.Kind, e.Seq, err)
	}
	if g := s.groupOf(tx); g != nil {
		g.signer = signer // the group signs its head once, before it commits
		g.kinds = append(g.kinds, e.Kind)
	} else if err := s.signCheckpoint(ctx, tx, signer); err != nil {
		// The caller's own transaction: its commit is out of sight, so sign now.
		return Entry{}, fmt.Errorf("append evidence %s: %w", in.Kind, err)
	} else {
		s.appended(e.Kind) // nor can the hook wait for that commit
	}
	return e, nil
}

// Commit commits a transaction of the caller's (one that AppendTx or PutReceiptsTx wrote in)
// as the store's own writes are: a full disk comes back as a *DiskFullError (disk_full),
// logged once while the store stays full.
func (s *Store) Commit(tx *sql.Tx) error {
	return s.noteWrite(tx.Commit())
}

func (s *Store) checkChainKey(ctx context.Context, tx *sql.Tx, pub ed25519.PublicKey) error {
	want := hex.EncodeToString(pub)
	var have string
	err := s.txQueryRow(ctx, tx, `SELECT value FROM meta WHERE key = ?`, []any{metaEvidenceKey}, &have)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?)`, metaEvidenceKey, want); err != nil {
			return fmt.Errorf("record chain key: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read chain key: %w", err)
	}
	if have != want {
		return fmt.Errorf("signer key %s… is not the key of this chain (%s…); the chain is signed by one node key", want[:16], have[:min(16, len(have))])
	}
	return nil
}
