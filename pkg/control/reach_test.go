package control

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// C4: when the control socket cannot be used the operator is told why, with the path, instead
// of a bare dial error: no socket or a socket left by an anetd that stopped is "anetd is not
// running" with how to start it; another user's socket or directory names that user.
func TestReachErrorsSayWhyWithThePath(t *testing.T) {
	ctx := context.Background()
	t.Run("no socket", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "control.sock")
		for name, err := range map[string]error{
			"CheckSocket": CheckSocket(sock),
			"Do":          NewClient(sock, "tok").Do(ctx, "GET", "/v1/ping", nil, nil),
		} {
			wantNotRunning(t, name, err, sock, "no control socket")
		}
	})
	t.Run("left by an anetd that stopped", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "control.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close() // the file stays, as after a SIGKILL
		if err := CheckSocket(sock); err != nil {
			t.Fatalf("CheckSocket(own stale socket) = %v, want nil (only a dial can tell)", err)
		}
		err = NewClient(sock, "tok").Do(ctx, "GET", "/v1/ping", nil, nil)
		wantNotRunning(t, "Do", err, sock, "connection refused")
		if strings.Contains(err.Error(), "dial unix") {
			t.Errorf("Do(stale socket) = %q, want no bare dial error", err)
		}
	})
	t.Run("no token", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "control.token")
		_, err := ReadToken(p)
		wantNotRunning(t, "ReadToken", err, p, "no control token")
	})
	t.Run("another user's socket", func(t *testing.T) {
		sock, _, _ := startServer(t)
		chownOther(t, sock)
		err := CheckSocket(sock)
		wantOtherUser(t, err, "control socket "+sock)
	})
	t.Run("another user's runtime directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		chownOther(t, dir)
		err := CheckSocket(filepath.Join(dir, "anet", "control.sock"))
		wantOtherUser(t, err, "directory "+dir)
	})
}

const otherUID = 65534

func chownOther(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, otherUID, otherUID); err != nil {
		t.Fatalf("this test needs root to give %s to uid %d (CI runs as root): %v", path, otherUID, err)
	}
}

func wantNotRunning(t *testing.T, name string, err error, path, why string) {
	t.Helper()
	if !errors.Is(err, ErrNotRunning) || reasons.CodeOf(err) != reasons.NodeNotRunning {
		t.Fatalf("%s = %v, want %s (errors.Is ErrNotRunning)", name, err, reasons.NodeNotRunning)
	}
	for _, want := range []string{"anetd is not running", path, why, "start it with `anetd`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %q, want it to say %q", name, err, want)
		}
	}
}

func wantOtherUser(t *testing.T, err error, what string) {
	t.Helper()
	if reasons.CodeOf(err) != reasons.OtherUser || errors.Is(err, ErrNotRunning) {
		t.Fatalf("CheckSocket = %v, want %s (not 'not running')", err, reasons.OtherUser)
	}
	for _, want := range []string{what + " belongs to", "(uid 65534)", "run anet as that user"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSocket = %q, want it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "start it") {
		t.Errorf("CheckSocket = %q: another user's anetd is running, do not tell this one to start it", err)
	}
}
