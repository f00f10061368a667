package rules

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// E7: the hand-written anthropic-version check accepts exactly what the pattern
// ^20[0-9]{2}-[01][0-9]-[0-3][0-9]$ accepts.
func TestAnthropicVersionMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^20[0-9]{2}-[01][0-9]-[0-3][0-9]$`)
	cases := []string{"2023-06-01", "2099-19-39", "2023-06-1", "2023-6-01", "1023-06-01", "2123-06-01",
		"2023-26-01", "2023-06-41", "2023/06/01", "2023-06-01 ", " 2023-06-01", "", "2023-06-0a", "20a3-06-01"}
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "0123-9 /a\n"
	for range 20000 {
		b := []byte("2023-06-01")
		for range 1 + r.IntN(2) {
			b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, v := range cases {
		if got, want := anthropicVersion(v), re.MatchString(v); got != want {
			t.Errorf("anthropicVersion(%q) = %v, the pattern says %v", v, got, want)
		}
	}
}
