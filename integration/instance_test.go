package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
)

// runSecond starts another anetd with env and args and waits for it to exit; a second anetd
// that keeps running is a failure (it is killed).
func runSecond(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testharness.Bin(t, "anetd"), args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("a second anetd kept running:\n%s", out.String())
		return "", nil
	}
}

func setEnv(env []string, key, value string) []string {
	out := []string{}
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// U2: a second anetd for the same data dir or the same runtime dir (here with another
// listen port, another config file, another runtime or data dir) exits non-zero naming the
// running one, and changes nothing: the token, the socket and the chain are as they were.
func TestSecondAnetdRefused(t *testing.T) {
	n := newNode(t, nodeOptions{})
	n.start()
	pid := n.cmd.Process.Pid
	token := n.path("run", "anet", "control.token")
	before, err := os.ReadFile(token)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(token)
	entries := len(evidence(t, n, ""))
	other := filepath.Join(n.root, "other.yaml")
	if err := os.WriteFile(other, fmt.Appendf(nil, "listen: \"127.0.0.1:%d\"\n", freePort(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	otherRun := filepath.Join(n.root, "r2") // short: a run's socket path must fit
	otherData := filepath.Join(n.root, "data2")
	for _, d := range []string{otherRun, otherData} {
		os.MkdirAll(d, 0o700)
	}
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"same dirs, another listen port", n.env},
		{"same data dir, another runtime dir", setEnv(n.env, "XDG_RUNTIME_DIR", otherRun)},
		{"same runtime dir, another data dir", setEnv(n.env, "XDG_DATA_HOME", otherData)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runSecond(t, tc.env, "--config", other)
			if err == nil {
				t.Fatalf("second anetd exited 0:\n%s", out)
			}
			want := fmt.Sprintf("another anetd is running (pid %d, control socket ", pid)
			if !strings.Contains(out, want) || !strings.Contains(out, "anetd_running") {
				t.Fatalf("second anetd said %q, want it to contain %q and the code anetd_running", out, want)
			}
		})
	}
	after, err := os.ReadFile(token)
	if err != nil || !bytes.Equal(after, before) {
		t.Fatalf("control token changed or vanished: %v", err)
	}
	if fi2, _ := os.Stat(token); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatal("control token was rewritten")
	}
	// The first node still answers on its socket with its token, and its chain has no
	// node_started from the refused ones.
	st := n.status()
	if st.PID != pid {
		t.Fatalf("status answered by pid %d, want %d", st.PID, pid)
	}
	if got := len(evidence(t, n, "")); got != entries {
		t.Fatalf("evidence entries %d → %d: a refused anetd wrote to the chain", entries, got)
	}
	if _, err := os.Stat(filepath.Join(otherRun, "anet", "control.sock")); err == nil {
		t.Fatal("a refused anetd left a control socket in its runtime dir")
	}
	// After the first one stops, the lock is free again (it is the kernel's, not a file's).
	n.stop()
	n.startProcess()
	n.waitReady()
	if st := n.status(); st.PID == pid {
		t.Fatalf("restarted node has pid %d", st.PID)
	}
}
