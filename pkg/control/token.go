// Package control is the local control channel between the `anet` CLI and anetd: HTTP/1.1
// with JSON bodies over a unix socket ($XDG_RUNTIME_DIR/anet/control.sock, 0600, in a 0700
// directory). Every request must carry the control token (a 0600 file beside the socket,
// made anew at each start) in the X-Anet-Control-Token header; the server compares it in
// constant time and also refuses connections from another uid (SO_PEERCRED), so a socket
// left readable by mistake still opens nothing.
package control

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// TokenHeader carries the control token.
const TokenHeader = "X-Anet-Control-Token"

// TokenPrefix begins every control token, so that the log scrubber (pkg/logging) knows one by
// its shape wherever it appears, as it knows a model-service key (F3).
const TokenPrefix = "anet-ctl-"

// NewToken returns TokenPrefix and 32 random bytes, hex-encoded. anetd makes a new one at
// every start.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("control token: %w", err)
	}
	return TokenPrefix + hex.EncodeToString(b), nil
}

// WriteToken writes tok to path with mode 0600, atomically.
func WriteToken(path, tok string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".control.token-*")
	if err != nil {
		return fmt.Errorf("write control token: %w", err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("write control token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("write control token: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write control token: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write control token: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write control token: %w", err)
	}
	return nil
}

// ErrNotRunning means there is no token (or socket): anetd is not running for this user.
var ErrNotRunning = errors.New("anetd is not running (no control token)")

// ReadToken reads the token, refusing a file others could read.
func ReadToken(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return "", notRunning(path, "there is no control token at "+path)
	}
	if err != nil {
		return "", fmt.Errorf("read control token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read control token: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("control token %s is accessible by others (mode %04o); restart anetd", path, fi.Mode().Perm())
	}
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	return strings.TrimSpace(string(buf[:n])), nil
}
