package runinit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// holdEnv makes this test binary act as a run's init whose hold is fd 3: the hold is tested
// between real processes, as bwrap starts init.
const holdEnv = "ANET_RUNINIT_TEST_HOLD"

func TestMain(m *testing.M) {
	if os.Getenv(holdEnv) != "" {
		os.Exit(Init(InitOptions{Argv: os.Args[1:], Hold: os.NewFile(3, "hold"), Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}

// TestHoldKeepsTheAgent (S6): init starts the agent only on the launcher's Release, which
// comes once the run's limits are in force; any other byte, or the launcher gone without a
// word, ends init with ExitGated and the agent never ran.
func TestHoldKeepsTheAgent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		verdict []byte // nil: the write end is closed unwritten
	}{{"release", []byte{Release}}, {"other byte", []byte{'y'}}, {"launcher gone", nil}} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(self, "/bin/sh", "-c", "echo ran >"+marker)
			cmd.Env = []string{holdEnv + "=1", "PATH=/usr/bin:/bin"}
			cmd.ExtraFiles = []*os.File{r}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if c.verdict != nil {
				if _, err := w.Write(c.verdict); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatal("init did not exit within a minute")
			}
			_, statErr := os.Stat(marker)
			code := cmd.ProcessState.ExitCode()
			if c.name == "release" {
				if code != 0 || statErr != nil {
					t.Fatalf("released: init exit %d, agent's file %v; want 0 and the file", code, statErr)
				}
				return
			}
			if code != ExitGated || !errors.Is(statErr, os.ErrNotExist) {
				t.Fatalf("%s: init exit %d, agent's file %v; want %d and no file", c.name, code, statErr, ExitGated)
			}
		})
	}
}
