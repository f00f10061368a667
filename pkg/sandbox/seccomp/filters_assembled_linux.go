//go:build linux && !amd64

package seccomp

import (
	"slices"
	"sync"
)

var (
	once     sync.Once
	built    [][]byte
	buildErr error
)

// Filters returns the arch filter and the main filter, in that order, as raw BPF programs
// (8-byte struct sock_filter in native byte order), one per `--add-seccomp-fd`. On this
// architecture they are assembled once per process; each call returns fresh copies.
func Filters(opts Options) ([][]byte, error) {
	once.Do(func() { built, buildErr = build(nil) })
	if buildErr != nil {
		return nil, buildErr
	}
	out := make([][]byte, len(built))
	for i, p := range built {
		out[i] = slices.Clone(p)
	}
	return out, nil
}
