//go:build !unix

package config

import (
	"errors"
	"io/fs"
)

// fileOwner fails closed: without file owners a private directory or keys file cannot be
// checked, and the node does not run natively there (O1: use WSL2 on Windows).
func fileOwner(fs.FileInfo) (int, error) {
	return 0, errors.New("file ownership cannot be checked on this platform")
}
