package bwrap

import "anet.dev/anet/pkg/sandbox/seccomp"

// defaultFilters are the two programs of pkg/sandbox/seccomp (arch filter, main filter),
// unless a test build asked for a weakened pair.
func defaultFilters() ([][]byte, error) {
	if f := testFilters(); f != nil {
		return f()
	}
	return seccomp.Filters(seccomp.Options{})
}
