//go:build unix

package identity

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readKeyFile reads an existing key file after checking, on the opened descriptor, that it is
// a private regular file of the current user. A missing file yields an error wrapping
// fs.ErrNotExist.
func readKeyFile(path string) ([]byte, error) {
	lst, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("load identity %s: %w", path, err)
	}
	if lst.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("load identity %s: is a symlink; refusing to follow it (replace it with the key file itself)", path)
	}
	// O_NOFOLLOW closes the race between the Lstat above and the open.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("load identity %s: open: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("load identity %s: stat: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("load identity %s: not a regular file", path)
	}
	if perm := st.Mode & 0o777; perm&0o077 != 0 {
		return nil, fmt.Errorf("load identity %s: mode %04o lets group or others access the node key; run: chmod 600 %s", path, perm, path)
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return nil, fmt.Errorf("load identity %s: owned by uid %d, not by the current user (uid %d); run: chown %d %s && chmod 600 %s", path, st.Uid, uid, uid, path, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("load identity %s: read: %w", path, err)
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("load identity %s: larger than %d bytes, not a key file", path, maxKeyFile)
	}
	return data, nil
}
