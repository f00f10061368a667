package control

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"anet.dev/anet/pkg/reasons"
)

// ReachError says why the control socket cannot be used, with the path and, for another
// user's socket, its owner: the operator learns what to do instead of a bare dial error.
type ReachError struct {
	Code reasons.Code // reasons.NodeNotRunning or reasons.OtherUser
	Path string
	Msg  string
}

func (e *ReachError) Error() string { return e.Msg }

// Reason is the error's code.
func (e *ReachError) Reason() reasons.Code { return e.Code }

// Is makes a not-running error match ErrNotRunning, which callers branch on (a file written
// while anetd is down applies at start).
func (e *ReachError) Is(target error) bool {
	return target == ErrNotRunning && e.Code == reasons.NodeNotRunning
}

func notRunning(path, why string) *ReachError {
	return &ReachError{Code: reasons.NodeNotRunning, Path: path,
		Msg: fmt.Sprintf("anetd is not running: %s; start it with `anetd` (or `systemctl --user start anetd`)", why)}
}

// userName is "name (uid N)", or "uid N" when the user database has no name for it;
// userNameIn is the same to go inside parentheses: "name, uid N".
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

func userNameIn(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("%s, uid %d", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

func otherUser(path string, owner int) *ReachError {
	who := userName(owner)
	return &ReachError{Code: reasons.OtherUser, Path: path, Msg: fmt.Sprintf(
		"%s belongs to %s, not to you (%s): anetd answers only the user it runs as; run anet as that user (for example `sudo -u '#%d' anet …`), or unset XDG_RUNTIME_DIR to reach your own anetd",
		path, who, userNameIn(os.Getuid()), owner)}
}

func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// CheckSocket says whether sock can be anetd's for this user before anything is sent to it:
// a socket that is not there means no anetd; one that another user owns (or that sits in
// another user's directory) would refuse this user whatever token it sent.
func CheckSocket(sock string) error {
	fi, err := os.Lstat(sock)
	switch {
	case err == nil:
		if uid, ok := ownerOf(fi); ok && uid != os.Getuid() {
			return otherUser("control socket "+sock, uid)
		}
		if fi.Mode()&fs.ModeSocket == 0 {
			return fmt.Errorf("control socket %s is not a socket (%s); remove it and start anetd", sock, fi.Mode().Type())
		}
		return nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		// The nearest directory above that exists and its owner: another user's runtime
		// directory is theirs even when this user cannot look inside it.
		for dir := filepath.Dir(sock); ; dir = filepath.Dir(dir) {
			if dfi, derr := os.Stat(dir); derr == nil {
				if uid, ok := ownerOf(dfi); ok && uid != os.Getuid() && uid != 0 {
					return otherUser("directory "+dir, uid)
				}
				break
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("control socket %s: %w", sock, err)
		}
		return notRunning(sock, "there is no control socket at "+sock)
	default:
		return fmt.Errorf("control socket %s: %w", sock, err)
	}
}

// sendError is a request's failure to reach anetd: a failed dial says why the socket cannot
// be used (dialError), anything later is the socket's own error.
func (c *Client) sendError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return dialError(c.sock, err)
	}
	return fmt.Errorf("anetd control socket %s: %w", c.sock, err)
}

// dialError explains a failed connection to sock.
func dialError(sock string, err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return notRunning(sock, "the control socket "+sock+" is left from an anetd that has stopped (connection refused)")
	case errors.Is(err, fs.ErrNotExist):
		return notRunning(sock, "there is no control socket at "+sock)
	}
	if cerr := CheckSocket(sock); cerr != nil {
		return cerr
	}
	return fmt.Errorf("anetd control socket %s: %w", sock, err)
}
