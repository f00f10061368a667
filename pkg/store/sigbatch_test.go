package store

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
)

// signedJobs returns n jobs with valid signatures by signer over distinct messages.
func signedJobs(signer seedSigner, n int) []sigJob {
	jobs := make([]sigJob, n)
	for i := range jobs {
		msg := CheckpointEncoding(int64(i+1), "2026-01-02T03:04:05Z", [32]byte{byte(i)})
		jobs[i] = sigJob{blame: int64(i + 1), msg: msg, sig: signer.Sign(msg)}
	}
	return jobs
}

// The batch check must give, for every signature, crypto/ed25519's verdict (B5: Verify checks
// each checkpoint's signature; the batch is only a faster way to do it). Each case spoils a few
// jobs of a full batch in its own way.
func TestBatchVerifierAgreesWithEd25519B5(t *testing.T) {
	signer := newSeedSigner(1)
	v, err := newBatchVerifier(signer.Public())
	if err != nil {
		t.Fatal(err)
	}
	other := newSeedSigner(2)
	order := new(big.Int).SetBytes(hexBytes(t, "1000000000000000000000000000000014def9dea2f79cd65812631a5cf5d3ed"))
	tests := []struct {
		name  string
		spoil func(j *sigJob)
	}{
		{"one bit of S", func(j *sigJob) { j.sig = flipByte(j.sig, 40) }},
		{"one bit of R", func(j *sigJob) { j.sig = flipByte(j.sig, 3) }},
		{"one bit of the message", func(j *sigJob) { j.msg = flipByte(j.msg, len(j.msg)-1) }},
		{"signed by another key", func(j *sigJob) { j.sig = other.Sign(j.msg) }},
		{"another entry's signature", func(j *sigJob) { j.sig = signer.Sign([]byte("another")) }},
		{"signature cut short", func(j *sigJob) { j.sig = j.sig[:63] }},
		{"no signature", func(j *sigJob) { j.sig = nil }},
		{
			// S + L gives the same point, so only the canonical-S rule refuses it.
			"S not reduced", func(j *sigJob) {
				s := new(big.Int).SetBytes(reversed(j.sig[32:]))
				s.Add(s, order)
				sig := append([]byte(nil), j.sig[:32]...)
				j.sig = append(sig, reversed(s.FillBytes(make([]byte, 32)))...)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := signedJobs(signer, sigBatch)
			bad := map[int]bool{}
			for range 3 {
				bad[rand.IntN(len(jobs))] = true
			}
			for i := range bad {
				tt.spoil(&jobs[i])
			}
			got := v.valid(jobs)
			for i, j := range jobs {
				want := len(j.sig) == ed25519.SignatureSize && ed25519.Verify(signer.Public(), j.msg, j.sig)
				if want == bad[i] {
					t.Fatalf("test setup: job %d spoiled %v but ed25519.Verify = %v", i, bad[i], want)
				}
				if got[i] != want {
					t.Errorf("valid()[%d] = %v, ed25519.Verify = %v", i, got[i], want)
				}
			}
			if v.all(jobs) {
				t.Errorf("all() = true for a batch with %d spoiled signatures", len(bad))
			}
		})
	}
	t.Run("all good", func(t *testing.T) {
		for _, n := range []int{1, batchMin - 1, batchMin, sigBatch} {
			jobs := signedJobs(signer, n)
			for i, ok := range v.valid(jobs) {
				if !ok {
					t.Errorf("valid() of %d good signatures: job %d refused", n, i)
				}
			}
			if n >= batchMin && !v.all(jobs) {
				t.Errorf("all() of %d good signatures = false", n)
			}
		}
	})
}

func TestCanonicalPointB5(t *testing.T) {
	p := "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" // 2^255-19, little-endian
	tests := []struct {
		enc  string
		want bool
	}{
		{"5866666666666666666666666666666666666666666666666666666666666666", true},  // the base point
		{"0100000000000000000000000000000000000000000000000000000000000000", true},  // the identity
		{"0100000000000000000000000000000000000000000000000000000000000080", false}, // identity, x = -0
		{"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", true},  // y = p-1
		{"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", false}, // y = p-1, x = -0
		{p, false}, // y = p
		{"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", false}, // y = p+1
		{"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", false}, // y = 2^255-1
		{"0000000000000000000000000000000000000000000000000000000000000080", true},  // y = 0, x negative
	}
	for _, tt := range tests {
		if got := canonicalPoint(hexBytes(t, tt.enc)); got != tt.want {
			t.Errorf("canonicalPoint(%s) = %v, want %v", tt.enc, got, tt.want)
		}
	}
}

// A chain of many batches (a checkpoint per entry, so several batches on several cores): the
// error names the lowest bad checkpoint, whichever batch a core finished first (B5).
func TestVerifyNamesLowestBadCheckpointAcrossBatchesB5(t *testing.T) {
	const n = 5*sigBatch + 7
	s := openTemp(t)
	signer := newSeedSigner(1)
	entries := appendN(t, s, signer, n)
	res, err := s.Verify(context.Background(), signer.Public())
	if err != nil || res.Entries != n || res.Checkpoints != n {
		t.Fatalf("Verify(before tampering) = %+v, %v; want %d entries and checkpoints", res, err, n)
	}
	for _, seq := range []int64{4*sigBatch + 3, 3 * sigBatch, sigBatch + 1} {
		tamper(t, s, `UPDATE evidence_checkpoints SET sig = ? WHERE seq = ?`, flipByte(checkpointSig(t, s, seq), 50), seq)
		res, err := s.Verify(context.Background(), signer.Public())
		var ce *ChainError
		want := fmt.Sprintf("the checkpoint at entry %d: signature invalid", seq)
		if !errors.As(err, &ce) || ce.Seq != seq || ce.Reason != want {
			t.Fatalf("Verify(checkpoint %d spoiled) = %v, want entry %d: %s", seq, err, seq, want)
		}
		if res.Entries != seq-1 || res.Head != entries[seq-2].Hash {
			t.Errorf("Verify(checkpoint %d spoiled) = %d entries, head %x; want %d, %x", seq, res.Entries, res.Head[:4], seq-1, entries[seq-2].Hash[:4])
		}
	}
}

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func reversed(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[len(b)-1-i] = c
	}
	return out
}
