package seatbelt

import (
	"os"
	"path/filepath"
)

// activeDeveloperDir is DeveloperDir on this host.
func activeDeveloperDir(operatorHome string) string {
	return DeveloperDir(os.Readlink, filepath.EvalSymlinks, operatorHome)
}
