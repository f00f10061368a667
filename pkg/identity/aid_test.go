package identity

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

func TestAIDFormat(t *testing.T) {
	for i := 0; i < 50; i++ {
		id, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		aid := id.AID()
		if len(aid) != 54 {
			t.Fatalf("len(aid %s) = %d, want 54", aid, len(aid))
		}
		if strings.Trim(aid, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("aid %s has characters outside [a-z2-7]", aid)
		}
		pub, err := PublicKeyFromAID(aid)
		if err != nil {
			t.Fatalf("PublicKeyFromAID(%s) error = %v", aid, err)
		}
		if !pub.Equal(id.Public()) {
			t.Fatalf("PublicKeyFromAID(%s) = %x, want %x", aid, pub, id.Public())
		}
	}
}

// TestAIDGolden pins the encoding: it is part of the wire format, so a change must break a test.
func TestAIDGolden(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	tests := []struct {
		name string
		pub  ed25519.PublicKey
		want string
	}{
		{"all zero", make(ed25519.PublicKey, 32), "an" + strings.Repeat("a", 52)},
		{"all ff", ed25519.PublicKey(bytesOf(0xff, 32)), "an" + strings.Repeat("7", 51) + "q"},
		{"seed 1..32", pub, goldenSeedAID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AIDFromPublicKey(tt.pub); got != tt.want {
				t.Errorf("AIDFromPublicKey(%x) = %s, want %s", []byte(tt.pub), got, tt.want)
			}
		})
	}
}

const goldenSeedAID = "anpg2vmlup4zkpsqdywejorkmlu6ib7bj242k35v7a4oiqxlieszsa"

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestPublicKeyFromAIDRejects(t *testing.T) {
	valid := goldenSeedAID
	// The last character holds 4 data bits and 1 unused bit: flipping the unused bit gives a
	// string that decodes to the same key, which must be refused.
	last := valid[len(valid)-1]
	nonCanonical := valid[:len(valid)-1] + string(aidAlphabet[strings.IndexByte(aidAlphabet, last)|1])

	tests := []struct {
		name, aid, want string
	}{
		{"empty", "", "must start with"},
		{"wrong prefix", "aa" + valid[2:], "must start with"},
		{"upper-case prefix", "AN" + valid[2:], "must start with"},
		{"too short", valid[:53], "length 53"},
		{"too long", valid + "a", "length 55"},
		{"upper case", "an" + strings.ToUpper(valid[2:]), "not in [a-z2-7]"},
		{"one upper-case letter", valid[:2] + "P" + valid[3:], "not in [a-z2-7]"},
		{"digit 0", valid[:20] + "0" + valid[21:], "not in [a-z2-7]"},
		{"digit 8", valid[:20] + "8" + valid[21:], "not in [a-z2-7]"},
		{"padding", valid[:53] + "=", "not in [a-z2-7]"},
		{"path separator", valid[:30] + "/" + valid[31:], "not in [a-z2-7]"},
		{"non-canonical trailing bit", nonCanonical, "not canonical"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub, err := PublicKeyFromAID(tt.aid)
			if err == nil {
				t.Fatalf("PublicKeyFromAID(%q) = %x, want error containing %q", tt.aid, []byte(pub), tt.want)
			}
			if !errors.Is(err, ErrInvalidAID) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("PublicKeyFromAID(%q) error = %q, want ErrInvalidAID containing %q", tt.aid, err, tt.want)
			}
			if ValidAID(tt.aid) == nil {
				t.Errorf("ValidAID(%q) = nil, want error", tt.aid)
			}
		})
	}
	if err := ValidAID(valid); err != nil {
		t.Errorf("ValidAID(%s) = %v, want nil", valid, err)
	}
	if nonCanonical == valid {
		t.Fatalf("test setup: non-canonical aid equals the valid one")
	}
}

const aidAlphabet = "abcdefghijklmnopqrstuvwxyz234567"
