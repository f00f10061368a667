//go:build unix

package linksafe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// A launcher killed with SIGKILL cannot delete its runs' home and tmp. Each run therefore
// holds an exclusive flock on its run dir for its lifetime (the kernel drops it when the
// launcher dies), and the next launch sweeps run dirs nobody holds.

// LockRunDir opens dir (no link followed) and takes the run's lock. Close the file to release.
func LockRunDir(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, dirFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("lock run dir %s: %w", dir, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock run dir %s: %w", dir, err)
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// SweepRunRoot removes run dirs under root that no live run holds and that are older than
// minAge (a run dir is made a moment before it is locked). It returns the removed paths.
func SweepRunRoot(root string, minAge time.Duration) ([]string, error) {
	rootfd, err := unix.Open(root, dirFlags, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", root, err)
	}
	defer unix.Close(rootfd)
	var removed []string
	var errs []error
	for _, name := range readNames(rootfd) {
		var st unix.Stat_t
		if unix.Fstatat(rootfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		if time.Since(time.Unix(st.Mtim.Unix())) < minAge {
			continue
		}
		fd, err := openDirAt(rootfd, name)
		if err == nil {
			if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
				unix.Close(fd) // a live run
				continue
			}
		}
		// Removing while holding the lock: no new run can claim this name meanwhile.
		if err := RemoveAt(rootfd, name); err != nil {
			errs = append(errs, fmt.Errorf("sweep %s: %w", root, err))
		} else {
			removed = append(removed, filepath.Join(root, name))
		}
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	return removed, errors.Join(errs...)
}
