//go:build !unix

package linksafe

import (
	"errors"
	"os"
	"time"
)

// ErrSymlink is returned when a path component that must be a directory is a link.
var ErrSymlink = errors.New("path component is a symlink or not a directory")

var errUnsupported = errors.New("link-safe directory handling is not implemented on this platform")

// MkdirUnder is not implemented on this platform.
func MkdirUnder(root, rel string, perm os.FileMode) (string, *os.File, error) {
	return "", nil, errUnsupported
}

// RemoveAt is not implemented on this platform.
func RemoveAt(dirfd int, name string) error { return errUnsupported }

// RemovePath is not implemented on this platform.
func RemovePath(path string) error { return errUnsupported }

// DiskUsage is not implemented on this platform.
func DiskUsage(dirs ...string) (int64, error) { return 0, errUnsupported }

// RemoveExpired is not implemented on this platform.
func RemoveExpired(root string, retention time.Duration, now time.Time) ([]string, error) {
	return nil, errUnsupported
}

// LockRunDir is not implemented on this platform.
func LockRunDir(dir string) (*os.File, error) { return nil, errUnsupported }

// SweepRunRoot is not implemented on this platform.
func SweepRunRoot(root string, minAge time.Duration) ([]string, error) { return nil, errUnsupported }

// WriteHomeFiles is not implemented on this platform.
func WriteHomeFiles(home string, files []File) error { return errUnsupported }

// File is one file WriteHomeFiles writes.
type File struct {
	Path    string
	Mode    uint32
	Content []byte
}

// RunDirs is what MakeRunDirs would make; nothing on this platform.
type RunDirs struct {
	Dir      string
	Lock     *os.File
	Made     []string
	Swept    []string
	SweepErr error
}

// MakeRunDirs is not implemented on this platform.
func MakeRunDirs(runRoot, id string, withWork bool) (RunDirs, error) {
	return RunDirs{}, errUnsupported
}
