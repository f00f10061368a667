package testkit

import "math/rand/v2"

// Mutate inserts, deletes or replaces one to three bytes of s, drawn from alphabet: the
// seeded mutation the differential tests of the JSON readers run beside their fuzz targets.
func Mutate(r *rand.Rand, s, alphabet string) string {
	b := []byte(s)
	for range 1 + r.IntN(3) {
		switch i := r.IntN(len(b) + 1); r.IntN(3) {
		case 0:
			b = append(b[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
		case 1:
			if i < len(b) {
				b = append(b[:i], b[i+1:]...)
			}
		default:
			if i < len(b) {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
		}
	}
	return string(b)
}
