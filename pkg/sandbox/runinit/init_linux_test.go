package runinit

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// holdEnv makes this test binary act as a run's init whose hold is fd 3: the hold is tested
// between real processes, as bwrap starts init.
const holdEnv = "ANET_RUNINIT_TEST_HOLD"

// joinEnv adds fd 4 as the one file init joins (runinit's Join).
const joinEnv = "ANET_RUNINIT_TEST_JOIN"

func TestMain(m *testing.M) {
	if os.Getenv(holdEnv) != "" {
		o := InitOptions{Argv: os.Args[1:], Hold: os.NewFile(3, "hold"), Stderr: os.Stderr}
		if os.Getenv(joinEnv) != "" {
			o.Join = []io.WriteCloser{os.NewFile(4, "join")}
		}
		os.Exit(Init(o))
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

// TestJoinBeforeTheAgent (S6): with Join, init first writes 0 into each file it was given (on
// cgroup v1 that moves the thread that will fork the agent into the run's cgroup), says
// Joined on the hold, and only then waits for the launcher's Release. A file it cannot write
// (here /dev/full, as a cgroup refusing the move would) ends init with ExitJoin: no Joined, and
// the agent never ran, even when the launcher releases it. The real cgroup is joined in
// pkg/sandbox/bwrap's TestAgentBornInItsCgroups.
func TestJoinBeforeTheAgent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		join func(t *testing.T) (*os.File, string) // the file init joins; its path when a plain file
	}{
		{"joined", func(t *testing.T) (*os.File, string) {
			p := filepath.Join(t.TempDir(), "tasks")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			return f, p
		}},
		{"refused", func(t *testing.T) (*os.File, string) {
			f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			return f, ""
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			pair, err := socketPair()
			if err != nil {
				t.Fatal(err)
			}
			launcher, initEnd := pair[0], pair[1]
			defer launcher.Close()
			jf, jp := c.join(t)
			cmd := exec.Command(self, "/bin/sh", "-c", "echo ran >"+marker)
			cmd.Env = []string{holdEnv + "=1", joinEnv + "=1", "PATH=/usr/bin:/bin"}
			cmd.ExtraFiles = []*os.File{initEnd, jf}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			initEnd.Close()
			jf.Close()
			var said [1]byte
			_, readErr := io.ReadFull(launcher, said[:])
			_, _ = launcher.Write([]byte{Release}) // released either way: a refused join must not need the launcher to notice
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
			if c.name == "joined" {
				wrote, err := os.ReadFile(jp)
				if readErr != nil || said[0] != Joined || err != nil || string(wrote) != "0" || code != 0 || statErr != nil {
					t.Fatalf("joined: said %d (%v), wrote %q (%v), init exit %d, agent's file %v; want Joined, \"0\", 0 and the file",
						said[0], readErr, wrote, err, code, statErr)
				}
				return
			}
			if readErr == nil || code != ExitJoin || !errors.Is(statErr, os.ErrNotExist) {
				t.Fatalf("refused: said %d (read err %v), init exit %d, agent's file %v; want nothing said, %d and no file",
					said[0], readErr, code, statErr, ExitJoin)
			}
		})
	}
}

// socketPair is a connected pair like the launcher's hold (both ends blocking here).
func socketPair() ([2]*os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return [2]*os.File{}, err
	}
	return [2]*os.File{os.NewFile(uintptr(fds[0]), "launcher"), os.NewFile(uintptr(fds[1]), "init")}, nil
}
