package store

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"
	"fmt"

	"filippo.io/edwards25519"
)

// Batch verification of the chain's signatures. A signature (R, S) of message M by key A is
// valid when [S]B = R + [k]A, k = SHA-512(R || A || M) mod L. A batch of n signatures by the one
// node key is checked at once by drawing a random 128-bit z_i per signature and testing
//
//	[8]( [-Σ z_i·S_i]B + [Σ z_i·k_i]A + Σ [z_i]R_i ) = 0
//
// with one multi-scalar multiplication over n+2 points: the key's terms add up to one, so each
// signature costs a point decompression and a few point additions instead of a full double
// scalar multiplication (about four times less on amd64). If any signature is invalid the sum
// is non-zero except with probability 2^-127, and then each signature of the batch is checked
// alone with crypto/ed25519, which names the bad ones.
//
// The batch equation is the cofactored check that RFC 8032 §5.1.7 allows; crypto/ed25519 uses
// the cofactorless one. They differ only on a signature whose R has a small-order component,
// which nobody without the private key can make for a key without one (the node's own). S
// must be canonical and R canonically encoded, as crypto/ed25519 requires.

// batchMin is the smallest batch worth a multi-scalar multiplication; smaller ones are checked
// one by one.
const batchMin = 4

// batchVerifier checks signatures by one public key.
type batchVerifier struct {
	pub ed25519.PublicKey
	a   *edwards25519.Point // pub decoded once
}

func newBatchVerifier(pub ed25519.PublicKey) (*batchVerifier, error) {
	a, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return nil, fmt.Errorf("public key is not a point of edwards25519: %w", err)
	}
	return &batchVerifier{pub: pub, a: a}, nil
}

// valid reports, for each job, whether its signature verifies. The common case, a batch that
// verifies as a whole, costs one multi-scalar multiplication.
func (v *batchVerifier) valid(jobs []sigJob) []bool {
	ok := make([]bool, len(jobs))
	if len(jobs) >= batchMin && v.all(jobs) {
		for i := range ok {
			ok[i] = true
		}
		return ok
	}
	for i, j := range jobs {
		ok[i] = len(j.sig) == ed25519.SignatureSize && ed25519.Verify(v.pub, j.msg, j.sig)
	}
	return ok
}

// all reports whether the batch equation holds for every job; false also when a signature is
// malformed.
func (v *batchVerifier) all(jobs []sigJob) bool {
	n := len(jobs)
	random := make([]byte, 16*n)
	if _, err := rand.Read(random); err != nil {
		return false // checked one by one instead
	}
	scalars := make([]edwards25519.Scalar, n+2)
	points := make([]edwards25519.Point, n)
	sp := make([]*edwards25519.Scalar, n+2)
	pp := make([]*edwards25519.Point, n+2)
	sumS, sumK := &scalars[n], &scalars[n+1] // Σ z_i·S_i and Σ z_i·k_i
	var (
		zb     [32]byte
		digest [64]byte
		s, k   edwards25519.Scalar
	)
	for i, j := range jobs {
		if len(j.sig) != ed25519.SignatureSize || !canonicalPoint(j.sig[:32]) {
			return false
		}
		if _, err := points[i].SetBytes(j.sig[:32]); err != nil {
			return false
		}
		if _, err := s.SetCanonicalBytes(j.sig[32:]); err != nil {
			return false
		}
		h := sha512.New()
		h.Write(j.sig[:32])
		h.Write(v.pub)
		h.Write(j.msg)
		if _, err := k.SetUniformBytes(h.Sum(digest[:0])); err != nil {
			return false
		}
		// z_i: 127 random bits and the top one set, so that no signature drops out of the sum.
		copy(zb[:16], random[16*i:])
		zb[15] |= 0x80
		z := &scalars[i]
		if _, err := z.SetCanonicalBytes(zb[:]); err != nil {
			return false
		}
		sumS.MultiplyAdd(z, &s, sumS)
		sumK.MultiplyAdd(z, &k, sumK)
		sp[i], pp[i] = z, &points[i]
	}
	sumS.Negate(sumS)
	sp[n], pp[n] = sumS, edwards25519.NewGeneratorPoint()
	sp[n+1], pp[n+1] = sumK, v.a
	check := new(edwards25519.Point).VarTimeMultiScalarMult(sp, pp)
	return check.MultByCofactor(check).Equal(edwards25519.NewIdentityPoint()) == 1
}

// canonicalPoint reports whether b is the canonical encoding RFC 8032 §5.1.3 requires: y below
// p = 2^255-19, and no sign bit on x = 0 (which only y = ±1 have).
func canonicalPoint(b []byte) bool {
	var y [32]byte
	copy(y[:], b)
	y[31] &= 0x7f
	// p in little-endian: ed ff … ff 7f.
	p := [32]byte{0: 0xed, 31: 0x7f}
	for i := 1; i < 31; i++ {
		p[i] = 0xff
	}
	less := false
	for i := 31; i >= 0; i-- {
		if y[i] != p[i] {
			less = y[i] < p[i]
			break
		}
	}
	if !less {
		return false
	}
	if b[31]&0x80 == 0 {
		return true
	}
	one := [32]byte{0: 1}
	minusOne := p
	minusOne[0]--
	return y != one && y != minusOne
}
