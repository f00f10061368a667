package bwrap

import "anet.dev/anet/pkg/sandbox/seccomp"

// Filters are the two programs of pkg/sandbox/seccomp (arch filter, main filter), unless a
// test build asked for a weakened pair. The VM tier's guest installs the same ones (V2).
func Filters() ([][]byte, error) { return defaultFilters() }

func defaultFilters() ([][]byte, error) {
	if f := testFilters(); f != nil {
		return f()
	}
	return seccomp.Filters(seccomp.Options{})
}
