//go:build !unix

package config

import (
	"errors"
	"io/fs"
	"os"
)

// lockFile fails closed: without a lock two sets could lose one's change (O1: the node does
// not run natively here; use WSL2 on Windows).
func lockFile(string) (func(), error) {
	return nil, errors.New("file locking is not supported on this platform")
}

func keepOwner(*os.File, fs.FileInfo) error {
	return errors.New("file ownership cannot be kept on this platform")
}
