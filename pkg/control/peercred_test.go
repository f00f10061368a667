package control

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The test binary doubles as a client run under another uid.
func TestMain(m *testing.M) {
	if sock := os.Getenv("ANET_CONTROL_TEST_CLIENT_SOCK"); sock != "" {
		err := NewClient(sock, os.Getenv("ANET_CONTROL_TEST_CLIENT_TOKEN")).Do(context.Background(), "GET", "/v1/ping", nil, nil)
		var re *RemoteError
		if errors.As(err, &re) {
			os.Stdout.WriteString(string(re.Code) + ": " + re.Message)
			os.Exit(0)
		}
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error())
			os.Exit(0)
		}
		os.Stdout.WriteString("answered")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The second wall: even with the right token and a socket opened to everyone by mistake, a
// process of another uid is refused (SO_PEERCRED). Needs root to run the client as nobody.
func TestOtherUIDRefusedEvenWithToken(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs a client as another uid and needs root (CI runs as root)")
	}
	sock, tok, logs := startServer(t)
	// Open the way to the socket that the 0600 mode and the 0700 dir normally close.
	// (t.TempDir is two levels of 0700 directories.)
	os.Chmod(filepath.Dir(filepath.Dir(sock)), 0o755)
	os.Chmod(filepath.Dir(sock), 0o755)
	os.Chmod(sock, 0o666)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary may sit in a root-only build dir: run a copy nobody can execute.
	bin := filepath.Join(filepath.Dir(sock), "client.test")
	data, _ := os.ReadFile(self)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"ANET_CONTROL_TEST_CLIENT_SOCK=" + sock, "ANET_CONTROL_TEST_CLIENT_TOKEN=" + tok}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client as nobody: %v", err)
	}
	// Told who it is, not that its right token is wrong.
	if !strings.HasPrefix(string(out), "other_user:") || !strings.Contains(string(out), "from uid 65534") || strings.Contains(string(out), "token") {
		t.Fatalf("client of another uid with the right token got %q, want other_user naming its uid, not the token", out)
	}
	if !strings.Contains(logs.String(), "other uid") || strings.Contains(logs.String(), tok) {
		t.Fatalf("refusal not logged, or logged with the token:\n%s", logs.String())
	}
}
