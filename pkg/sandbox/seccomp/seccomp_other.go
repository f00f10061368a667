//go:build !linux

package seccomp

import (
	"fmt"
	"os"
	"runtime"
)

// Filters is unsupported off Linux.
func Filters(opts Options) ([][]byte, error) {
	return nil, fmt.Errorf("seccomp filters on %s: %w", runtime.GOOS, ErrUnsupported)
}

// WriteMemfd is unsupported off Linux.
func WriteMemfd(prog []byte) (*os.File, error) {
	return nil, fmt.Errorf("seccomp memfd on %s: %w", runtime.GOOS, ErrUnsupported)
}

// Install is unsupported off Linux.
func Install(progs [][]byte) error {
	return fmt.Errorf("seccomp install on %s: %w", runtime.GOOS, ErrUnsupported)
}
