package runinit

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// holdEnv makes this test binary act as a run's init whose hold is fd 3: the hold is tested
// between real processes, as bwrap starts init.
const holdEnv = "ANET_RUNINIT_TEST_HOLD"

// fsizeEnv makes this test binary act as a run's init with no hold and the RLIMIT_FSIZE it
// names.
const fsizeEnv = "ANET_RUNINIT_TEST_FSIZE"

// plainEnv makes this test binary act as a run's init with no hold and no relay.
const plainEnv = "ANET_RUNINIT_TEST_PLAIN"

func TestMain(m *testing.M) {
	if os.Getenv(holdEnv) != "" {
		os.Exit(Init(InitOptions{Argv: os.Args[1:], Hold: os.NewFile(3, "hold"), Stderr: os.Stderr}))
	}
	if v := os.Getenv(fsizeEnv); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			panic(err)
		}
		os.Exit(Init(InitOptions{Argv: os.Args[1:], FileSize: n, Stderr: os.Stderr}))
	}
	if os.Getenv(plainEnv) != "" {
		os.Exit(Init(InitOptions{Argv: os.Args[1:], Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}

// TestInitForwardsSignals (S6): each signal init forwards reaches the agent's process group:
// the launcher's stop (TERM, at the wall clock) and the others. Init registers them all before
// the agent starts, so one sent as soon as the agent runs is not lost.
func TestInitForwardsSignals(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
			agent := `trap 'echo got-` + name + `; exit 0' ` + name + `; echo ready $$; while :; do sleep 0.01; done`
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cmd := exec.Command(self, "/bin/sh", "-c", agent)
			cmd.Env = []string{plainEnv + "=1", "PATH=/usr/bin:/bin"}
			cmd.Stdout = w
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			lines := make(chan string, 2)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(r)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			// A signal init does not forward ends init or is ignored; either way the agent
			// runs on and says nothing more.
			next := func(what string) string {
				select {
				case l, ok := <-lines:
					if ok {
						return l
					}
					t.Fatalf("the agent's output ended before its %s", what)
				case <-time.After(time.Minute):
					cmd.Process.Kill()
					t.Fatalf("no %s from the agent within a minute", what)
				}
				return ""
			}
			ready := strings.Fields(next("ready line"))
			if len(ready) != 2 || ready[0] != "ready" {
				t.Fatalf("agent said %q, want ready and its pid", ready)
			}
			// Off a pid namespace the agent outlives an init that died: end its group.
			if pid, err := strconv.Atoi(ready[1]); err == nil {
				defer syscall.Kill(-pid, syscall.SIGKILL)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if l := next("trap line"); l != "got-"+name {
				t.Fatalf("after %v to init the agent said %q, want got-%s", sig, l, name)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("init after the agent trapped %v: %v, want exit 0", sig, err)
				}
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatal("init did not exit within a minute of its agent")
			}
		})
	}
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

// TestInitSetsTheRunsRlimits (S6): init itself sets RLIMIT_CORE to 0 and RLIMIT_FSIZE to the
// run's bound, soft and hard, before the agent starts — whatever it inherited (here a raised
// soft core limit and no file size limit, as from an operator's shell) — so no core file
// carries a run's memory to disk and one file stays bounded while the disk poll catches up.
// The agent cannot raise its soft core limit back (the hard one is 0). The same limits seen through real bwrap: pkg/sandbox/bwrap
// TestRunNoCoreDumps and TestDiskLimitKill.
func TestInitSetsTheRunsRlimits(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const fsize = 3 << 20 // bytes; /proc shows them, ulimit -f counts 1024-byte blocks
	script := `ulimit -S -c unlimited 2>/dev/null && echo raised-core; cat /proc/self/limits`
	cmd := exec.Command("/bin/sh", "-c", `ulimit -S -c unlimited; exec "$@"`, "sh", self, "/bin/sh", "-c", script)
	cmd.Env = []string{fsizeEnv + "=" + strconv.Itoa(fsize), "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("init: %v, stdout %q", err, out)
	}
	got := map[string][]string{}
	for _, l := range strings.Split(string(out), "\n") {
		for _, name := range []string{"Max core file size", "Max file size"} {
			if f, ok := strings.CutPrefix(l, name); ok {
				got[name] = strings.Fields(f)
			}
		}
	}
	if strings.Contains(string(out), "raised-") {
		t.Errorf("the agent raised a limit init set: %q", out)
	}
	if c := got["Max core file size"]; len(c) < 2 || c[0] != "0" || c[1] != "0" {
		t.Errorf("core limit in the agent = %q, want soft 0 and hard 0; stdout %q", c, out)
	}
	want := strconv.Itoa(fsize)
	if f := got["Max file size"]; len(f) < 2 || f[0] != want || f[1] != want {
		t.Errorf("file size limit in the agent = %q, want soft and hard %s; stdout %q", f, want, out)
	}
}
