package config

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzParseShowRoundTrip: for any bytes an operator's file may hold, Parse either refuses
// with structured errors (each a *Error naming a line or a key, with its reason code), or
// its Config is shown (`anet config show`) as YAML that parses back to the same Config, and
// showing that again gives the same bytes (a fixpoint), so show's output is always a file the
// node reads as it was shown (U3, C4).
func FuzzParseShowRoundTrip(f *testing.F) {
	seeds := []string{
		operatorFile,
		"",
		"# only a comment\n",
		"~\n",
		"---\n",
		"listen: \"\"\nlisten: 127.0.0.1:1\n",
		"auto_reply:\n  sandbox:\n    runs_per_day: 010\n",
		"auto_reply:\n  sandbox:\n    runs_per_day: 0x10\n    tasks_max: 0b111\n",
		"auto_reply:\n  api_timeout_seconds: 1.5\n",
		"auto_reply:\n  egress_allow:\n    - pypi.org\n    - {a: b}\n",
		"auto_reply:\n  model: &m x\n  api_base: *m\n",
		"auto_reply:\n  api_base: https://llm.example.com/v1\n  agent: opencode\n  egress_allow:\n    - pypi.org\n    - llm.example.com\n",
		"# head comment kept\nauto_reply: {trusted: direct, untrusted: off}  # inline section\nlisten: \"\"\n",
		"auto_reply:\n  work_retention: 7d\n  sandbox:\n    disk_max: 1GiB\n    memory_max: 2GiB\n    spend_per_day: 5.00\n",
		"intake:\n  disk_free_min: 0\n",
		"listen: !!binary aGk=\n",
		"- listen\n",
		"log_level: loud\n",
		"a: 1\n---\nb: 2\n",
	}
	if out, err := Show(Default()); err == nil {
		seeds = append(seeds, string(out))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("config.yaml", data)
		if err != nil {
			for _, e := range leafErrors(err) {
				var ce *Error
				if !errors.As(e, &ce) {
					t.Fatalf("Parse(%q) error %q (%T) is not a *config.Error", data, e, e)
				}
				if ce.Line <= 0 && ce.Key == "" {
					t.Fatalf("Parse(%q) error %q names neither a line nor a key", data, e)
				}
				if ce.Reason() == "" {
					t.Fatalf("Parse(%q) error %q has no reason code", data, e)
				}
			}
			return
		}
		shown, err := Show(c)
		if err != nil {
			t.Fatalf("Show(Parse(%q)) = %v", data, err)
		}
		back, err := Parse("shown.yaml", shown)
		if err != nil {
			t.Fatalf("Parse(Show(Parse(%q))) = %v; shown:\n%s", data, err, shown)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("Parse(Show(c)) = %+v, want c = %+v; shown:\n%s", back, c, shown)
		}
		again, err := Show(back)
		if err != nil || !bytes.Equal(again, shown) {
			t.Fatalf("Show is not a fixpoint: Show(Parse(Show(c))) = %q, %v, want %q", again, err, shown)
		}
	})
}

// leafErrors flattens errors.Join trees.
func leafErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}
