package peer

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"anet.dev/anet/pkg/canonical"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// Type is a message type on the wire.
type Type string

// The three message types.
const (
	TypeTask    Type = "task"
	TypeReply   Type = "reply"
	TypeRefusal Type = "refusal"
)

// Size limits. A frame holds one signed message or one ack.
const (
	MaxText  = limits.TaskTextBytes // bytes of UTF-8 in a task or reply
	MaxFrame = 1 << 20              // bytes of one frame's payload
	MaxID    = 64                   // bytes of a message id or interaction id
	MaxCode  = 64                   // bytes of a refusal code
)

// msgTag starts every signed message; it changes if the encoding does, and keeps a message
// signature from ever being valid as an evidence or TLS signature.
const msgTag = "anet-msg-v1"

// msgFields is the number of length-prefixed fields after the tag.
const msgFields = 10

// Message is one task, reply or refusal, as signed by its sender.
type Message struct {
	Type        Type
	ID          string    // unique per sender; the receiver's de-duplication key
	From        string    // sender aid
	To          string    // recipient aid
	Sent        time.Time // when this copy was signed (UTC, nanoseconds)
	Interaction string    // chosen by the task's sender; unique per (sender, interaction)
	Text        string    // task and reply: 1..MaxText bytes; refusal: empty
	Code        reasons.Code
	Until       time.Time // refusal with code budget: when the refusing node's day ends
	ReplyPort   int       // task: the port the sender listens on for answers, 0 = none
}

// SignedMessage is a message with the exact bytes that were signed and the signature.
type SignedMessage struct {
	Message
	Encoding []byte // canonical encoding (see the package doc)
	Sig      []byte // Ed25519 by From's key over Encoding
}

// Raw returns the frame payload: encoding followed by the 64-byte signature.
func (s SignedMessage) Raw() []byte {
	out := make([]byte, 0, len(s.Encoding)+len(s.Sig))
	return append(append(out, s.Encoding...), s.Sig...)
}

// Digest is SHA-256 of Raw: what the evidence chain records of a message.
func (s SignedMessage) Digest() [32]byte { return sha256.Sum256(s.Raw()) }

// ContentDigest is SHA-256 of the encoding with the sent time left empty: two copies of one
// message that were signed at different times (retries) have the same content digest.
func (m Message) ContentDigest() [32]byte {
	c := m
	c.Sent = time.Time{}
	return sha256.Sum256(c.encode(""))
}

// formatTime is the canonical time text: RFC 3339, UTC, fraction without trailing zeros.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || formatTime(t) != s {
		return time.Time{}, fmt.Errorf("%s: %q is not a canonical RFC 3339 UTC time", field, s)
	}
	return t.UTC(), nil
}

// validYear refuses a time RFC 3339 cannot write with four year digits: the encoding would
// hold "10000-…" or "-0001-…", which every receiver's parser refuses, so a signed message
// would be delivered over and over and never accepted.
func validYear(field string, t time.Time) error {
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("%s: year %d is outside 0000-9999 (RFC 3339)", field, y)
	}
	return nil
}

// Encode returns the canonical encoding of m after checking every field.
func (m Message) Encode() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m.encode(formatTime(m.Sent)), nil
}

func (m Message) encode(sent string) []byte {
	until := ""
	if !m.Until.IsZero() {
		until = formatTime(m.Until)
	}
	port := ""
	if m.ReplyPort != 0 {
		port = strconv.Itoa(m.ReplyPort)
	}
	return canonical.Encode(msgTag, string(m.Type), m.ID, m.From, m.To, sent, m.Interaction, m.Text, string(m.Code), until, port)
}

// Validate checks every field against the rules of the wire format. Errors name the field.
func (m Message) Validate() error {
	switch m.Type {
	case TypeTask, TypeReply, TypeRefusal:
	default:
		return fmt.Errorf("type: %q is not task, reply or refusal", m.Type)
	}
	if err := ValidID("id", m.ID); err != nil {
		return err
	}
	if err := identity.ValidAID(m.From); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if err := identity.ValidAID(m.To); err != nil {
		return fmt.Errorf("to: %w", err)
	}
	if m.Sent.IsZero() {
		return errors.New("sent: missing")
	}
	if err := validYear("sent", m.Sent); err != nil {
		return err
	}
	if !m.Until.IsZero() {
		if err := validYear("until", m.Until); err != nil {
			return err
		}
	}
	if err := ValidID("interaction", m.Interaction); err != nil {
		return err
	}
	if len(m.Text) > MaxText {
		return &TooLargeError{Field: "text", Size: len(m.Text), Limit: MaxText}
	}
	if !utf8.ValidString(m.Text) {
		return errors.New("text: not valid UTF-8")
	}
	switch m.Type {
	case TypeTask, TypeReply:
		if m.Text == "" {
			return fmt.Errorf("text: a %s needs text", m.Type)
		}
		if m.Code != "" || !m.Until.IsZero() {
			return fmt.Errorf("code, until: only a refusal has them")
		}
	case TypeRefusal:
		if m.Text != "" {
			return errors.New("text: a refusal has no text")
		}
		if err := validCode(string(m.Code)); err != nil {
			return err
		}
		if (m.Code == reasons.Budget) != !m.Until.IsZero() {
			return errors.New("until: required for code budget and only there")
		}
	}
	if m.ReplyPort < 0 || m.ReplyPort > 65535 || (m.ReplyPort != 0 && m.Type != TypeTask) {
		return fmt.Errorf("reply_port: %d is not a port of a task", m.ReplyPort)
	}
	return nil
}

// ValidID checks a message or interaction id: 1..64 bytes of [A-Za-z0-9_-].
func ValidID(field, s string) error {
	if s == "" || len(s) > MaxID {
		return fmt.Errorf("%s: must be 1 to %d characters", field, MaxID)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%s: %q may hold only letters, digits, '_' and '-'", field, s)
		}
	}
	return nil
}

func validCode(s string) error {
	if s == "" || len(s) > MaxCode {
		return fmt.Errorf("code: must be 1 to %d characters", MaxCode)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return fmt.Errorf("code: %q must match [a-z_]+", s)
		}
	}
	return nil
}

// TooLargeError is a size limit that was exceeded.
type TooLargeError struct {
	Field string
	Size  int
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes, more than the limit of %d", e.Field, e.Size, e.Limit)
}

// Signer signs with a node key; *identity.Identity satisfies it.
type Signer interface {
	Sign(msg []byte) []byte
	Public() ed25519.PublicKey
}

// Sign encodes m and signs it with key, whose aid must be m.From.
func Sign(key Signer, m Message) (SignedMessage, error) {
	if identity.AIDFromPublicKey(key.Public()) != m.From {
		return SignedMessage{}, fmt.Errorf("sign message: from %s is not the signing key's aid", m.From)
	}
	m.Sent = m.Sent.UTC()
	if !m.Until.IsZero() {
		m.Until = m.Until.UTC()
	}
	enc, err := m.Encode()
	if err != nil {
		return SignedMessage{}, fmt.Errorf("sign message: %w", err)
	}
	return SignedMessage{Message: m, Encoding: enc, Sig: key.Sign(enc)}, nil
}

// ErrBadSignature is returned by Parse when the signature does not verify.
var ErrBadSignature = errors.New("signature does not verify with the sender's key")

// Parse decodes a frame payload (encoding and signature), checks every field and verifies
// the signature with the key named by From. The message is returned even when only the
// signature fails, so the caller can name it in its answer.
func Parse(raw []byte) (SignedMessage, error) {
	if len(raw) < ed25519.SignatureSize {
		return SignedMessage{}, fmt.Errorf("message: %d bytes, shorter than a signature", len(raw))
	}
	enc, sig := raw[:len(raw)-ed25519.SignatureSize], raw[len(raw)-ed25519.SignatureSize:]
	f, err := canonical.Decode(enc, msgTag, msgFields)
	if err != nil {
		return SignedMessage{}, fmt.Errorf("message: %w", err)
	}
	m := Message{Type: Type(f[0]), ID: f[1], From: f[2], To: f[3], Interaction: f[5], Text: f[6], Code: reasons.Code(f[7])}
	if m.Sent, err = parseTime("sent", f[4]); err != nil {
		return SignedMessage{}, err
	}
	if f[8] != "" {
		if m.Until, err = parseTime("until", f[8]); err != nil {
			return SignedMessage{}, err
		}
	}
	if f[9] != "" {
		p, err := strconv.Atoi(f[9])
		if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != f[9] {
			return SignedMessage{}, fmt.Errorf("reply_port: %q is not a port number", f[9])
		}
		m.ReplyPort = p
	}
	if err := m.Validate(); err != nil {
		return SignedMessage{}, err
	}
	sm := SignedMessage{Message: m, Encoding: append([]byte(nil), enc...), Sig: append([]byte(nil), sig...)}
	pub, err := identity.PublicKeyFromAID(m.From)
	if err != nil {
		return sm, fmt.Errorf("from: %w", err)
	}
	if !ed25519.Verify(pub, enc, sig) {
		return sm, ErrBadSignature
	}
	return sm, nil
}
