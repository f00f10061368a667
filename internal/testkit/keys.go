package testkit

import "crypto/ed25519"

// SeedKey is the Ed25519 key whose 32-byte seed is first, first+1, …: the same key on every
// run, so golden hashes and signatures stay fixed. Never a real node's key.
func SeedKey(first byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = first + byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}
