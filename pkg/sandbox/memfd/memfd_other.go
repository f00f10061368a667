//go:build !linux

package memfd

import (
	"errors"
	"fmt"
	"os"
)

// Sealed is not available here: sealing needs memfd_create (Linux). The backends that pass
// sealed programs and environments to a child (bwrap) are Linux-only.
func Sealed(name string, data []byte) (*os.File, error) {
	return nil, fmt.Errorf("memfd %s: %w", name, errors.ErrUnsupported)
}

// New returns an empty anonymous file for a child to write into: a temporary file that is
// unlinked at once, so it vanishes with its last descriptor as a memfd would.
func New(name string) (*os.File, error) {
	f, err := os.CreateTemp("", name+"-")
	if err != nil {
		return nil, fmt.Errorf("anonymous file %s: %w", name, err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("anonymous file %s: %w", name, err)
	}
	return f, nil
}
