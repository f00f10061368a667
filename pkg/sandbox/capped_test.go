package sandbox

import "testing"

// TestLastLine: a program's last word, from a console with carriage returns too.
func TestLastLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		"one\n":                        "one",
		"boot\r\nkernel panic\r\n\r\n": "kernel panic",
		"a\nb\n  \n":                   "b",
	} {
		if got := LastLine(in); got != want {
			t.Errorf("LastLine(%q) = %q, want %q", in, got, want)
		}
	}
}
