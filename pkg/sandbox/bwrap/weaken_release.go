//go:build !anettest && linux

package bwrap

// testWeakening is always empty in release builds: no configuration, flag or variable can
// turn a protection off.
func testWeakening() Weakening { return Weakening{} }

// testFilters is nil in release builds: the filters are always pkg/sandbox/seccomp's.
func testFilters() func() ([][]byte, error) { return nil }
