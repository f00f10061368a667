package control

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

func startServer(t *testing.T) (sock, tok string, logs *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	sock = filepath.Join(dir, "control.sock")
	var err error
	tok, err = NewToken()
	if err != nil {
		t.Fatal(err)
	}
	logs = &bytes.Buffer{}
	s := NewServer(tok, slog.New(slog.NewTextHandler(logs, nil)))
	s.Handle("GET", "/v1/ping", func(*http.Request) (any, error) { return map[string]string{"pong": "yes"}, nil })
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return sock, tok, logs
}

func TestSocketMode(t *testing.T) {
	sock, _, _ := startServer(t)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %04o, want 0600", fi.Mode().Perm())
	}
}

func TestTokenRequired(t *testing.T) {
	sock, tok, logs := startServer(t)
	for _, tc := range []struct {
		name, token string
		wantErr     bool
	}{
		{"missing", "", true},
		{"wrong", strings.Repeat("0", len(tok)), true},
		{"prefix", tok[:len(tok)-1], true},
		{"right", tok, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out map[string]string
			err := NewClient(sock, tc.token).Do(context.Background(), "GET", "/v1/ping", nil, &out)
			if !tc.wantErr {
				if err != nil || out["pong"] != "yes" {
					t.Fatalf("Do with right token = %v, %v", out, err)
				}
				return
			}
			var re *RemoteError
			if !errors.As(err, &re) || re.Code != reasons.Unauthorized || re.Status != http.StatusUnauthorized {
				t.Fatalf("Do with %s token = %v, want 401 unauthorized", tc.name, err)
			}
			if tc.token != "" && strings.Contains(logs.String(), tc.token) {
				t.Fatalf("the refused token appears in the log: %s", logs.String())
			}
		})
	}
	if !strings.Contains(logs.String(), "missing token") || !strings.Contains(logs.String(), "wrong token") {
		t.Fatalf("refusals not logged: %s", logs.String())
	}
	if strings.Contains(logs.String(), tok) {
		t.Fatal("the real token appears in the log")
	}
}

func TestSecondServerRefused(t *testing.T) {
	sock, _, _ := startServer(t)
	if _, err := Listen(sock); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("Listen on a live socket = %v, want 'already running'", err)
	}
}

func TestTokenFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "control.token")
	if err := WriteToken(p, "abc"); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token mode = %04o", fi.Mode().Perm())
	}
	if got, err := ReadToken(p); err != nil || got != "abc" {
		t.Fatalf("ReadToken = %q, %v", got, err)
	}
	os.Chmod(p, 0o644)
	if _, err := ReadToken(p); err == nil {
		t.Fatal("ReadToken accepted a 0644 token file")
	}
	if _, err := ReadToken(p + ".missing"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("ReadToken(missing) = %v, want ErrNotRunning", err)
	}
}

func TestListenRefusesOverlongPath(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", 110) + "/control.sock"
	if _, err := Listen(long); err == nil || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
		t.Fatalf("Listen(overlong) = %v, want an error that says what to do", err)
	}
}
