package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"anet.dev/anet/pkg/reasons"
)

// Reason codes this package owns (registered in reasons.go of this package).
const (
	// ConfigInvalid: the configuration file cannot be used.
	ConfigInvalid reasons.Code = "config_invalid"
	// KeysFileExposed: the keys file is open to other users or owned by another user.
	KeysFileExposed reasons.Code = "keys_file_exposed"
	// PrivateDirUnsafe: a private directory is a symlink, not a directory, another user's or
	// open to other users.
	PrivateDirUnsafe reasons.Code = "private_dir_unsafe"
	// KeysFileInvalid: the keys file is a symlink, not a regular file, or not a valid map of
	// provider names to keys.
	KeysFileInvalid reasons.Code = "keys_file_invalid"
	// ConfigFileExposed: the config file can be changed by another user.
	ConfigFileExposed reasons.Code = "config_file_exposed"
	// ConfigMissing: the config file named with --config does not exist.
	ConfigMissing reasons.Code = "config_missing"
	// SocketPathTooLong: a unix socket of the node would not fit in sun_path.
	SocketPathTooLong reasons.Code = "socket_path_too_long"
)

// PermError is a refused directory or keys file; Code says which rule, Fix is the command that
// repairs it ("" when there is no safe one to suggest).
type PermError struct {
	Code reasons.Code
	Path string
	Msg  string
	Fix  string
}

// Reason returns the rule's code.
func (e *PermError) Reason() reasons.Code { return e.Code }

func (e *PermError) Error() string {
	if e.Fix == "" {
		return e.Msg
	}
	return e.Msg + "; run " + e.Fix
}

// EnsurePrivateDir creates path (and missing parents) with mode 0700 and checks the last
// component: it must not be a symlink, must be a directory, owned by the current user, and not
// accessible by group or others. An existing directory is checked, never chmod-ed: a wrong mode
// means something else made it, and the operator should know.
func EnsurePrivateDir(path string) error {
	path = filepath.Clean(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create private dir %s: %w", path, err)
	}
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create private dir %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("check private dir %s: %w", path, err)
	}
	bad := func(msg, fix string) error {
		return &PermError{Code: PrivateDirUnsafe, Path: path, Msg: fmt.Sprintf("private dir %s %s", path, msg), Fix: fix}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return bad("is a symlink; it must be a real directory", "rm "+shellQuote(path))
	case !fi.IsDir():
		return bad(fmt.Sprintf("is not a directory (%s)", fi.Mode().Type()), "")
	}
	uid, err := fileOwner(fi)
	if err != nil {
		return fmt.Errorf("check private dir %s: %w", path, err)
	}
	if uid != os.Getuid() {
		return bad(fmt.Sprintf("is owned by uid %d, not by the current user (uid %d)", uid, os.Getuid()),
			"")
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return bad(fmt.Sprintf("is accessible by group or others (mode %04o)", perm), "chmod 700 "+shellQuote(path))
	}
	return nil
}

// OpenKeysFile is the one keys-file rule (F3), for every program that checks the file and
// for anet-egress, the only one that reads it: the file must not be a symlink (the node would
// otherwise follow a link it did not make to a file it cannot vouch for), must be a regular
// file owned by the current user and not accessible by group or others, like an ssh private
// key. The checks look at the open file's metadata (so nothing can be swapped in between)
// and nothing is read. A missing file is (nil, nil): no keys configured. The caller closes
// the file.
func OpenKeysFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, syscall.ELOOP):
		target, _ := os.Readlink(path)
		return nil, &PermError{Code: KeysFileInvalid, Path: path,
			Msg: fmt.Sprintf("keys file %s is a symlink (to %s); put the file itself there, or set keys_file to the target", path, target)}
	case errors.Is(err, fs.ErrPermission):
		// Most often another user's file (copied in with sudo): say whose, and the fix, as
		// the owner check of a file that could be opened does.
		if fi, lerr := os.Lstat(path); lerr == nil {
			if cerr := checkKeysFileInfo(path, fi); cerr != nil {
				return nil, cerr
			}
		}
		return nil, fmt.Errorf("open keys file %s: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("open keys file %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("check keys file %s: %w", path, err)
	}
	if err := checkKeysFileInfo(path, fi); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkKeysFileInfo(path string, fi fs.FileInfo) error {
	bad := func(code reasons.Code, msg, fix string) error {
		return &PermError{Code: code, Path: path, Msg: "keys file " + path + " " + msg, Fix: fix}
	}
	if !fi.Mode().IsRegular() {
		return bad(KeysFileInvalid, fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type()), "")
	}
	uid, err := fileOwner(fi)
	if err != nil {
		return fmt.Errorf("check keys file %s: %w", path, err)
	}
	if uid != os.Getuid() {
		return bad(KeysFileExposed, fmt.Sprintf("is owned by %s, not by the current user (%s)", ownerName(uid, false), ownerName(os.Getuid(), true)),
			fmt.Sprintf("sudo chown %d %s", os.Getuid(), shellQuote(path)))
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o044 != 0:
		return bad(KeysFileExposed, fmt.Sprintf("is readable by others (mode %04o)", perm), "chmod 600 "+shellQuote(path))
	case perm&0o077 != 0:
		return bad(KeysFileExposed, fmt.Sprintf("is accessible by others (mode %04o)", perm), "chmod 600 "+shellQuote(path))
	}
	return nil
}

// ownerName is "name (uid N)", or "uid N" when the user database has no name for it; with
// inParens, "name, uid N", to go inside parentheses.
func ownerName(uid int, inParens bool) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		if inParens {
			return fmt.Sprintf("%s, uid %d", u.Username, uid)
		}
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// shellQuote quotes a path for a command the operator copies, only when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
