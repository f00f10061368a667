// Package money holds the node's money figures as integers (K1): amounts in micro-units of
// the price list's currency, prices in micro-units per million tokens, token counts per class,
// and what tokens cost at a price. Decimal text (the config's caps, the price list) converts
// exactly, digit by digit: no float ever holds an amount.
package money

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Micros is an amount in micro-units of the price list's currency (USD in the built-in list):
// 1.50 is 1500000.
type Micros int64

// PerUnit is how many micro-units make one unit of currency.
const PerUnit = 1_000_000

// maxIntDigits bounds the integer part of a decimal amount: 12 digits keep every amount, and
// a price times a token count summed over a day, far from int64's limit.
const maxIntDigits = 12

// ParseDecimal reads a non-negative decimal amount with at most six digits after the point
// ("5", "5.00", "0.000125") into micro-units. Exponents, signs, spaces and thousands
// separators are refused rather than guessed.
func ParseDecimal(s string) (Micros, error) {
	bad := func() (Micros, error) {
		return 0, fmt.Errorf("%q is not an amount (allowed: a decimal number with at most 6 digits after the point, e.g. 5.00)", s)
	}
	whole, frac, hasPoint := strings.Cut(s, ".")
	if whole == "" || !digits(whole) || (hasPoint && (frac == "" || !digits(frac))) {
		return bad()
	}
	if len(frac) > 6 {
		return 0, fmt.Errorf("%q has more than 6 digits after the point (amounts are kept in millionths)", s)
	}
	whole = strings.TrimLeft(whole, "0")
	if len(whole) > maxIntDigits {
		return 0, fmt.Errorf("%q is too large (at most %d digits before the point)", s, maxIntDigits)
	}
	w, _ := strconv.ParseInt("0"+whole, 10, 64)
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return Micros(w*PerUnit + f), nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String writes m as a decimal with at least two digits after the point and no trailing
// zeros beyond them: 1.50, 0.004096, 12.345678. ParseDecimal reads it back.
func (m Micros) String() string {
	sign := ""
	u := uint64(m)
	if m < 0 {
		sign, u = "-", uint64(-(m+1))+1
	}
	frac := fmt.Sprintf("%06d", u%PerUnit)
	for len(frac) > 2 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	return sign + strconv.FormatUint(u/PerUnit, 10) + "." + frac
}

// Prices are one model's prices in micro-units per million tokens, per token class. A model
// whose list gives no cache prices has its input price for both (the price list does not
// distinguish them).
type Prices struct {
	Input      Micros `json:"input"`
	Output     Micros `json:"output"`
	CacheWrite Micros `json:"cache_write"`
	CacheRead  Micros `json:"cache_read"`
}

// MaxInput is the highest price any input token can be charged: the worst case of an input
// token whose class is not known yet.
func (p Prices) MaxInput() Micros { return max(p.Input, p.CacheWrite, p.CacheRead) }

// Tokens counts tokens per class. Input excludes the cache classes; Output includes reasoning
// tokens, which are billed as output; Reasoning is kept for the record only.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheWrite int64 `json:"cache_write"`
	CacheRead  int64 `json:"cache_read"`
	Reasoning  int64 `json:"reasoning"`
}

// Add returns the sum of t and o, saturating rather than wrapping.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{
		Input: satAdd(t.Input, o.Input), Output: satAdd(t.Output, o.Output),
		CacheWrite: satAdd(t.CacheWrite, o.CacheWrite), CacheRead: satAdd(t.CacheRead, o.CacheRead),
		Reasoning: satAdd(t.Reasoning, o.Reasoning),
	}
}

// Cost is what t costs at p: the exact sum of tokens × price per class, divided by one
// million and rounded up to a whole micro-unit (never charged less than used). The sum is
// computed in 128 bits; a result beyond int64 saturates. Negative counts count as zero.
func (p Prices) Cost(t Tokens) Micros {
	var hi, lo uint64
	for _, c := range [...]struct {
		n int64
		p Micros
	}{{t.Input, p.Input}, {t.Output, p.Output}, {t.CacheWrite, p.CacheWrite}, {t.CacheRead, p.CacheRead}} {
		if c.n <= 0 || c.p <= 0 {
			continue
		}
		h, l := bits.Mul64(uint64(c.n), uint64(c.p))
		var carry uint64
		lo, carry = bits.Add64(lo, l, 0)
		hi, _ = bits.Add64(hi, h, carry)
	}
	const million = 1_000_000
	if hi >= million {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, million)
	if r > 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return Micros(q)
}

// Add returns a+b, saturating at the int64 limits.
func Add(a, b Micros) Micros { return Micros(satAdd(int64(a), int64(b))) }

func satAdd(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// Spend is what one run's model traffic used and cost (K1): the record the endpoint reports
// and the evidence chain keeps.
type Spend struct {
	// Model is the pinned model the prices are of.
	Model string `json:"model,omitempty"`
	// Prices are nil when the model has no prices in the models file: tokens are counted
	// but cost nothing known (only allowed for runs without an allowance).
	Prices *Prices `json:"prices,omitempty"`
	Tokens Tokens  `json:"tokens"`
	// Cost is the sum of every metered response's cost, estimates included.
	Cost Micros `json:"cost_micros"`
	// Responses counts the metered responses; UsageMissing those of them that reported no
	// usage and were charged the conservative estimate.
	Responses    int64 `json:"responses"`
	UsageMissing int64 `json:"usage_missing"`
	// Allowance is the run's spending allowance; nil means none was set.
	Allowance *Micros `json:"allowance_micros,omitempty"`
}
