package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
)

// PermError is a refused directory or keys file; Code says which rule, Fix is the command that
// repairs it ("" when there is no safe one to suggest).
type PermError struct {
	Code reasons.Code
	Path string
	Msg  string
	Fix  string
}

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

// CheckKeysFileMode refuses a keys file that other users can read, like ssh does with a
// private key. It never opens the file: anetd must not read the keys (only anet-egress does).
// A missing file is fine (no keys configured); a symlink is followed and its target checked.
func CheckKeysFileMode(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check keys file %s: %w", path, err)
	}
	shown := path
	if fi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = os.Stat(path); err != nil {
			return fmt.Errorf("check keys file %s: symlink target: %w", path, err)
		}
		if target, err := filepath.EvalSymlinks(path); err == nil {
			shown = path + " (-> " + target + ")"
		}
	}
	bad := func(msg, fix string) error {
		return &PermError{Code: KeysFileExposed, Path: path, Msg: "keys file " + shown + " " + msg, Fix: fix}
	}
	if !fi.Mode().IsRegular() {
		return bad(fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type()), "")
	}
	uid, err := fileOwner(fi)
	if err != nil {
		return fmt.Errorf("check keys file %s: %w", path, err)
	}
	if uid != os.Getuid() {
		return bad(fmt.Sprintf("is owned by uid %d, not by the current user (uid %d)", uid, os.Getuid()),
			fmt.Sprintf("chown %d %s", os.Getuid(), shellQuote(path)))
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o044 != 0:
		return bad(fmt.Sprintf("is readable by others (mode %04o)", perm), "chmod 600 "+shellQuote(path))
	case perm&0o077 != 0:
		return bad(fmt.Sprintf("is accessible by others (mode %04o)", perm), "chmod 600 "+shellQuote(path))
	}
	return nil
}

// shellQuote quotes a path for a command the operator copies, only when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
