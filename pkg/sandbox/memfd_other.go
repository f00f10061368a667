//go:build !linux

package sandbox

import "os"

// SealedMemfd is not implemented on this platform (no memfd_create).
func SealedMemfd(name string, data []byte) (*os.File, error) { return nil, errUnsupported }
