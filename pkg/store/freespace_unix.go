//go:build linux || darwin

package store

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	// Bavail: what an unprivileged process may still use (the root reserve excluded).
	return int64(st.Bavail) * int64(st.Bsize), nil
}
