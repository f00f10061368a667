package metrics

import (
	"strings"
	"testing"
)

// Label values may come from bytes another process wrote (a run's usage report): whatever
// arrives, the value kept is the input itself only when it has a code's shape, else
// "other", and the scrape still parses.
func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"spend_limit", "", "other", "Evil\n{x=\"1\"}", strings.Repeat("a", 65), "ÿ", "host_not_allowed2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		m := New(Options{})
		got := m.values.of("code", v)
		if got != v && got != OtherValue {
			t.Fatalf("of(%q) = %q, want the value or %q", v, got, OtherValue)
		}
		if got == v && !codeShaped(v) {
			t.Fatalf("of(%q) kept a value that is not code-shaped", v)
		}
		m.RunRefused(v, 1)
		if _, ok := sample(scrape(t, m.Handler()), "anet_refusals_total", "to", "run", "code", got); !ok {
			t.Fatalf("RunRefused(%q) made no series %q", v, got)
		}
	})
}
