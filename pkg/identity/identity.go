// Package identity holds the node's Ed25519 key and derives its address, the aid.
//
// # aid encoding (wire format)
//
// An aid is the string
//
//	"an" + lowercase(base32(pub))
//
// where pub is the 32-byte raw Ed25519 public key and base32 is the RFC 4648 §6 alphabet
// (A–Z, 2–7) without padding, written in lower case. 32 bytes are 256 bits, so the base32
// part has 52 characters and an aid has 54, all in [a-z2-7]: it is safe as a path
// component and in URLs. The last character carries 1 unused bit that must be zero; an aid
// is accepted only in this canonical form (see PublicKeyFromAID), so every key has exactly
// one aid and two different strings never name the same node.
//
// # Key file
//
// The private key is stored as a PEM block of type "PRIVATE KEY" holding the PKCS#8 encoding
// of the Ed25519 key, in a regular file of mode 0600 owned by the user running the node. The
// key never leaves this package: an Identity prints, formats and logs as its aid only.
package identity

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// AIDPrefix starts every aid.
const AIDPrefix = "an"

// AIDLen is the length of every aid: the prefix and 52 base32 characters.
const AIDLen = len(AIDPrefix) + 52

var aidEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// Identity is the node's key pair. The zero value is not usable; get one from LoadOrCreate
// or Generate.
type Identity struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	aid  string
}

// Generate returns a new identity that lives only in memory (tests, throw-away nodes).
func Generate() (*Identity, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate identity: %w", err)
	}
	return fromPrivateKey(priv), nil
}

func fromPrivateKey(priv ed25519.PrivateKey) *Identity {
	pub := priv.Public().(ed25519.PublicKey)
	return &Identity{priv: priv, pub: pub, aid: AIDFromPublicKey(pub)}
}

// AID returns the node's address.
func (id *Identity) AID() string { return id.aid }

// Public returns a copy of the public key, so a caller cannot change the identity's.
func (id *Identity) Public() ed25519.PublicKey {
	return append(ed25519.PublicKey(nil), id.pub...)
}

// Sign signs msg with the node key (pure Ed25519, no pre-hash).
func (id *Identity) Sign(msg []byte) []byte { return ed25519.Sign(id.priv, msg) }

// Signer returns a crypto.Signer for certificates and TLS. It is a wrapper, not the
// ed25519.PrivateKey itself, so a type assertion cannot reach the key bytes.
func (id *Identity) Signer() crypto.Signer { return keySigner{id: id} }

// String returns the aid.
func (id *Identity) String() string { return id.aid }

// GoString returns the aid, so %#v does not print the key.
func (id *Identity) GoString() string { return "identity(" + id.aid + ")" }

// Format prints the aid for every verb; without it %d or %x would walk the struct and print
// the private key.
func (id *Identity) Format(f fmt.State, verb rune) { _, _ = io.WriteString(f, id.aid) }

// LogValue logs only the aid.
func (id *Identity) LogValue() slog.Value { return slog.StringValue(id.aid) }

type keySigner struct{ id *Identity }

func (s keySigner) Public() crypto.PublicKey { return s.id.Public() }

func (s keySigner) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return s.id.priv.Sign(r, digest, opts)
}

func (s keySigner) String() string                { return s.id.aid }
func (s keySigner) GoString() string              { return s.id.GoString() }
func (s keySigner) Format(f fmt.State, verb rune) { _, _ = io.WriteString(f, s.id.aid) }
func (s keySigner) LogValue() slog.Value          { return slog.StringValue(s.id.aid) }

// AIDFromPublicKey returns the aid of pub. pub must be 32 bytes (ed25519.PublicKeySize).
func AIDFromPublicKey(pub ed25519.PublicKey) string {
	return AIDPrefix + strings.ToLower(aidEncoding.EncodeToString(pub))
}

// ErrInvalidAID is wrapped by every error PublicKeyFromAID and ValidAID return.
var ErrInvalidAID = errors.New("invalid aid")

// PublicKeyFromAID parses an aid strictly: the prefix, the length, the lower-case alphabet
// and the canonical form (unused trailing bits zero) are all checked.
func PublicKeyFromAID(aid string) (ed25519.PublicKey, error) {
	if !strings.HasPrefix(aid, AIDPrefix) {
		return nil, fmt.Errorf("%w %q: must start with %q", ErrInvalidAID, aid, AIDPrefix)
	}
	if len(aid) != AIDLen {
		return nil, fmt.Errorf("%w %q: length %d, want %d", ErrInvalidAID, aid, len(aid), AIDLen)
	}
	body := aid[len(AIDPrefix):]
	for i := 0; i < len(body); i++ {
		if c := body[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return nil, fmt.Errorf("%w %q: character %q at %d is not in [a-z2-7]", ErrInvalidAID, aid, c, len(AIDPrefix)+i)
		}
	}
	raw, err := aidEncoding.DecodeString(strings.ToUpper(body))
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalidAID, aid, err)
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w %q: decodes to %d bytes, want %d", ErrInvalidAID, aid, len(raw), ed25519.PublicKeySize)
	}
	// Go's base32 decoder ignores the unused low bit of the last character, so without this
	// check two strings would decode to the same key.
	if AIDFromPublicKey(raw) != aid {
		return nil, fmt.Errorf("%w %q: not canonical (unused trailing bits set)", ErrInvalidAID, aid)
	}
	return ed25519.PublicKey(raw), nil
}

// ValidAID reports whether aid is a well-formed, canonical aid.
func ValidAID(aid string) error {
	_, err := PublicKeyFromAID(aid)
	return err
}
