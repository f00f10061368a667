package money

import (
	"math"
	"strings"
	"testing"
)

// K1: amounts convert exactly from decimal text and back, without floats.
func TestParseDecimalK1(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Micros
		err  string
	}{
		{"0", 0, ""},
		{"5", 5_000_000, ""},
		{"5.00", 5_000_000, ""},
		{"0.10", 100_000, ""},
		{"0.000001", 1, ""},
		{"1.234567", 1_234_567, ""},
		{"007.5", 7_500_000, ""},
		{"999999999999.999999", 999_999_999_999_999_999, ""},
		{"1000000000000", 0, "too large"},
		{"0.0000001", 0, "more than 6 digits"},
		{"-1", 0, "not an amount"},
		{"+1", 0, "not an amount"},
		{"1e3", 0, "not an amount"},
		{"1,5", 0, "not an amount"},
		{" 1", 0, "not an amount"},
		{".5", 0, "not an amount"},
		{"5.", 0, "not an amount"},
		{"", 0, "not an amount"},
		{"0x10", 0, "not an amount"},
	} {
		got, err := ParseDecimal(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseDecimal(%q) = %d, %v, want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseDecimal(%q) = %d, %v, want %d", c.in, got, err, c.want)
		}
		if back, err := ParseDecimal(got.String()); err != nil || back != got {
			t.Errorf("ParseDecimal(%q.String() = %q) = %d, %v: no round trip", c.in, got.String(), back, err)
		}
	}
	for m, want := range map[Micros]string{0: "0.00", 1_500_000: "1.50", 4096: "0.004096", 12_345_678: "12.345678", -250_000: "-0.25", math.MinInt64: "-9223372036854.775808"} {
		if got := m.String(); got != want {
			t.Errorf("Micros(%d).String() = %q, want %q", int64(m), got, want)
		}
	}
}

// K1: cost is tokens × price per class, summed exactly, rounded up once to the micro-unit.
func TestCostK1(t *testing.T) {
	haiku := Prices{Input: 100_000, Output: 500_000, CacheWrite: 125_000, CacheRead: 10_000}
	for _, c := range []struct {
		name string
		p    Prices
		t    Tokens
		want Micros
	}{
		{"nothing", haiku, Tokens{}, 0},
		// 1000×0.1 + 200×0.5 = 200 µ exactly.
		{"exact", haiku, Tokens{Input: 1000, Output: 200}, 200},
		// 3×0.1 + 1×0.5 = 0.8 µ → 1 µ: rounded up, never down.
		{"rounded up", haiku, Tokens{Input: 3, Output: 1}, 1},
		// 10×0.1 + 10×0.5 + 1000×0.125 + 100000×0.01 = 1 + 5 + 125 + 1000 = 1131 µ.
		{"every class", haiku, Tokens{Input: 10, Output: 10, CacheWrite: 1000, CacheRead: 100_000}, 1131},
		// Reasoning tokens are inside Output: they add nothing of their own.
		{"reasoning is output", haiku, Tokens{Output: 1000, Reasoning: 900}, 500},
		{"negative counts ignored", haiku, Tokens{Input: -5, Output: 2}, 1},
		{"saturates", Prices{Input: 999_999_999_999_999_999}, Tokens{Input: math.MaxInt64}, math.MaxInt64},
		// 2^63-1 tokens at 1 µ/MTok = 9223372036854.775807 µ → rounded up.
		{"128-bit sum", Prices{Input: 1, Output: 1}, Tokens{Input: math.MaxInt64, Output: 1}, 9_223_372_036_855},
	} {
		if got := c.p.Cost(c.t); got != c.want {
			t.Errorf("%s: Cost(%+v) = %d, want %d", c.name, c.t, got, c.want)
		}
	}
	if got := haiku.MaxInput(); got != 125_000 {
		t.Errorf("MaxInput() = %d, want the cache-write price 125000", got)
	}
	if got := (Tokens{Input: math.MaxInt64}).Add(Tokens{Input: 1, Output: 2}); got.Input != math.MaxInt64 || got.Output != 2 {
		t.Errorf("Tokens.Add = %+v, want saturated input and output 2", got)
	}
	if got := Add(math.MaxInt64, 1); got != math.MaxInt64 {
		t.Errorf("Add(max, 1) = %d, want saturation", got)
	}
}
