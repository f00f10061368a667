//go:build !linux && !darwin

package store

import (
	"errors"
	"fmt"
)

func freeBytes(dir string) (int64, error) {
	return 0, fmt.Errorf("free space of %s: %w", dir, errors.ErrUnsupported)
}
