package sandbox

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a byte count: a plain number or one with a K, M, G (binary) suffix, as in
// "2G" or "64M". Empty is 0 (the default).
func ParseSize(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	num := strings.TrimSuffix(strings.ToUpper(s), "B")
	if num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional K, M or G suffix", s)
	}
	switch num[len(num)-1] {
	case 'K':
		mult, num = 1<<10, num[:len(num)-1]
	case 'M':
		mult, num = 1<<20, num[:len(num)-1]
	case 'G':
		mult, num = 1<<30, num[:len(num)-1]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want a number with an optional K, M or G suffix", s)
	}
	return n * mult, nil
}
