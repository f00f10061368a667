//go:build unix

package linksafe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Run and work directories are attacked (S3): a run can plant symlinks in its
// work dir, and the work dir outlives the run. Everything here works relative to directory
// file descriptors opened with O_NOFOLLOW, so a planted link is never followed, whether we
// create, measure or delete.

// ErrSymlink is returned when a path component that must be a directory is a link.
var ErrSymlink = errors.New("path component is a symlink or not a directory")

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// MkdirUnder creates root (0700, following links the operator made, then resolved) and the
// components of rel below it, each with mode perm, refusing any component that is a symlink
// or a directory not owned by us. It returns the resolved path and an open fd of the last dir.
func MkdirUnder(root, rel string, perm os.FileMode) (string, *os.File, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", nil, fmt.Errorf("mkdir %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", nil, fmt.Errorf("resolve %s: %w", root, err)
	}
	fd, err := unix.Open(real, dirFlags, 0)
	if err != nil {
		return "", nil, fmt.Errorf("open %s: %w", real, err)
	}
	path := real
	if rel != "" {
		if err := ValidateRelPath(rel); err != nil {
			unix.Close(fd)
			return "", nil, fmt.Errorf("mkdir under %s: %w", real, err)
		}
		for _, c := range strings.Split(rel, "/") {
			path = filepath.Join(path, c)
			if err := unix.Mkdirat(fd, c, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return "", nil, fmt.Errorf("mkdir %s: %w", path, err)
			}
			next, err := openDirAt(fd, c)
			unix.Close(fd)
			if err != nil {
				return "", nil, fmt.Errorf("open %s: %w", path, err)
			}
			fd = next
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return "", nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if rel != "" && int(st.Uid) != os.Geteuid() {
		unix.Close(fd)
		return "", nil, fmt.Errorf("mkdir %s: owned by uid %d, not us", path, st.Uid)
	}
	return path, os.NewFile(uintptr(fd), path), nil
}

// openDirAt opens name below dirfd as a directory without following a link.
func openDirAt(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, dirFlags, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, fmt.Errorf("%s: %w", name, ErrSymlink)
	}
	return fd, err
}

// RemoveAt deletes name below the directory dirfd and, when it is a directory, everything in
// it, never following a link: a link is removed, not its target. A directory the run made
// unreadable (chmod 000) is made accessible first; we own everything a run creates.
func RemoveAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("unlink %s: %w", name, err)
	}
	// An empty dir goes at once (a run's dirs are often empty).
	err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	fd, err := openDirAt(dirfd, name)
	if errors.Is(err, unix.EACCES) {
		if cerr := unix.Fchmodat(dirfd, name, 0o700, 0); cerr == nil {
			fd, err = openDirAt(dirfd, name)
		}
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	d := os.NewFile(uintptr(fd), name)
	defer d.Close()
	// The dir may lack write/search permission for us (a run can chmod its own dirs): we own
	// it, so that is fixed once, when removing an entry is refused.
	fixed := false
	for {
		names, rerr := d.Readdirnames(256)
		for _, n := range names {
			err := RemoveAt(fd, n)
			if err != nil && !fixed && errors.Is(err, unix.EACCES) {
				fixed = true
				if unix.Fchmod(fd, 0o700) == nil {
					err = RemoveAt(fd, n)
				}
			}
			if err != nil {
				return fmt.Errorf("%s/%w", name, err)
			}
		}
		if rerr != nil {
			break
		}
		// Rewind: entries were removed while reading.
		if _, err := d.Seek(0, 0); err != nil {
			return fmt.Errorf("rewind %s: %w", name, err)
		}
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("rmdir %s: %w", name, err)
	}
	return nil
}

// RemovePath deletes path (its parent is resolved and opened without following a link in the
// last component) and everything below it.
func RemovePath(path string) error {
	if !cleanAbs(path) || path == "/" {
		return fmt.Errorf("remove %q: want a clean absolute path below /", path)
	}
	parent, err := unix.Open(filepath.Dir(path), dirFlags, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("remove %s: open parent: %w", path, err)
	}
	defer unix.Close(parent)
	if err := RemoveAt(parent, filepath.Base(path)); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// DiskUsage sums the allocated bytes of everything below the given directories, counting a
// hard-linked inode once and never following a link.
func DiskUsage(dirs ...string) (int64, error) {
	seen := map[[2]uint64]bool{}
	var total int64
	for _, dir := range dirs {
		fd, err := unix.Open(dir, dirFlags, 0)
		if err != nil {
			return total, fmt.Errorf("disk usage %s: %w", dir, err)
		}
		n, err := usageAt(fd, seen, 0)
		unix.Close(fd)
		total += n
		if err != nil {
			return total, fmt.Errorf("disk usage %s: %w", dir, err)
		}
	}
	return total, nil
}

// maxDepth bounds recursion; a deeper tree is still counted up to here, which only makes the
// limit fire later for an attacker who builds a 4096-deep tree of tiny dirs.
const maxDepth = 512

func usageAt(fd int, seen map[[2]uint64]bool, depth int) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	total := st.Blocks * 512
	if depth >= maxDepth {
		return total, nil
	}
	dup, err := unix.Dup(fd) // d.Close must not close the caller's fd
	if err != nil {
		return total, err
	}
	d := os.NewFile(uintptr(dup), "")
	defer d.Close()
	for {
		names, rerr := d.Readdirnames(512)
		for _, n := range names {
			var cst unix.Stat_t
			if err := unix.Fstatat(dup, n, &cst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue // removed meanwhile
			}
			if cst.Mode&unix.S_IFMT == unix.S_IFDIR {
				cfd, err := openDirAt(dup, n)
				if err != nil {
					continue
				}
				sub, _ := usageAt(cfd, seen, depth+1)
				unix.Close(cfd)
				total += sub
				continue
			}
			if cst.Nlink > 1 {
				k := [2]uint64{uint64(cst.Dev), cst.Ino}
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			total += cst.Blocks * 512
		}
		if rerr != nil {
			return total, nil
		}
	}
}

// RemoveExpired deletes work dirs <root>/<aid>/<interaction> whose status-change time is
// older than retention, and aid dirs left empty. ctime is used because a run can set its work
// dir's mtime to the future but cannot set ctime. Links at any level are removed, never
// followed. It returns the removed paths.
func RemoveExpired(root string, retention time.Duration, now time.Time) ([]string, error) {
	rootfd, err := unix.Open(root, dirFlags, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("retention %s: %w", root, err)
	}
	defer unix.Close(rootfd)
	var removed []string
	var errs []error
	expired := func(dirfd int, name string) bool {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return false
		}
		return now.Sub(time.Unix(st.Ctim.Unix())) > retention
	}
	for _, aid := range readNames(rootfd) {
		afd, err := openDirAt(rootfd, aid)
		if err != nil {
			if errors.Is(err, ErrSymlink) { // a link where a dir belongs: drop the link
				if err := unix.Unlinkat(rootfd, aid, 0); err == nil {
					removed = append(removed, filepath.Join(root, aid))
				}
			}
			continue
		}
		left := 0
		for _, inter := range readNames(afd) {
			if !expired(afd, inter) {
				left++
				continue
			}
			if err := RemoveAt(afd, inter); err != nil {
				errs = append(errs, fmt.Errorf("retention %s/%s: %w", root, aid, err))
				left++
				continue
			}
			removed = append(removed, filepath.Join(root, aid, inter))
		}
		unix.Close(afd)
		if left == 0 && expired(rootfd, aid) {
			if err := unix.Unlinkat(rootfd, aid, unix.AT_REMOVEDIR); err == nil {
				removed = append(removed, filepath.Join(root, aid))
			}
		}
	}
	return removed, errors.Join(errs...)
}

func readNames(fd int) []string {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil
	}
	d := os.NewFile(uintptr(dup), "")
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	return names
}

// File is one file WriteHomeFiles writes: a relative path of plain names, its permission
// bits (at most 0700) and its content.
type File struct {
	Path    string
	Mode    uint32
	Content []byte
}

// WriteHomeFiles writes files under home, which the launcher has just created empty for this
// run. Parents are made with MkdirUnder and each file with O_EXCL|O_NOFOLLOW relative to its
// parent's descriptor, so nothing is written through a link.
func WriteHomeFiles(home string, files []File) error {
	for _, hf := range files {
		dir, name := filepath.Split(hf.Path)
		_, df, err := MkdirUnder(home, strings.TrimSuffix(dir, "/"), 0o700)
		if err != nil {
			return fmt.Errorf("home file %s: %w", hf.Path, err)
		}
		fd, err := unix.Openat(int(df.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, hf.Mode&0o700)
		df.Close()
		if err != nil {
			return fmt.Errorf("home file %s: %w", hf.Path, err)
		}
		f := os.NewFile(uintptr(fd), hf.Path)
		_, werr := f.Write(hf.Content)
		cerr := f.Close()
		if werr != nil || cerr != nil {
			return fmt.Errorf("home file %s: %w", hf.Path, errors.Join(werr, cerr))
		}
	}
	return nil
}

func cleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && strings.IndexByte(p, 0) < 0
}
