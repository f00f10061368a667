//go:build linux

package seatbelt

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// wrapCmd runs the test binary as the limits wrapper around argv.
func wrapCmd(lim RunLimits, argv ...string) *exec.Cmd {
	self, _ := os.Executable()
	cmd := exec.Command(self, argv...)
	cmd.Env = append(os.Environ(), roleEnv+"=wrap")
	for i, v := range []uint64{lim.CPU, lim.FileSize, lim.OpenFiles, lim.Procs} {
		cmd.Env = append(cmd.Env, fmt.Sprintf("ANET_SEATBELT_TEST_LIMIT%d=%d", i, v))
	}
	return cmd
}

// S6: what the wrapper sets on itself reaches the program it starts (there: sandbox-exec,
// then the agent and all it forks), soft and hard alike, so nothing in the run can raise a
// limit back; core files are always off.
func TestWrapAppliesLimitsS6(t *testing.T) {
	lim := RunLimits{CPU: 1234, FileSize: 5 << 20, OpenFiles: 321, Procs: 4321}
	out, err := wrapCmd(lim, "/bin/cat", "/proc/self/limits").Output()
	if err != nil {
		t.Fatalf("wrapped cat: %v", err)
	}
	want := map[string]string{
		"Max cpu time": "1234", "Max file size": strconv.Itoa(5 << 20), "Max open files": "321",
		"Max processes": "4321", "Max core file size": "0",
	}
	for _, line := range strings.Split(string(out), "\n") {
		for k, v := range want {
			if strings.HasPrefix(line, k+" ") {
				f := strings.Fields(strings.TrimPrefix(line, k))
				if len(f) < 2 || f[0] != v || f[1] != v {
					t.Errorf("%s: soft %v, hard %v, want both %s", k, f[0], f[1], v)
				}
				delete(want, k)
			}
		}
	}
	if len(want) > 0 {
		t.Fatalf("limits not found in /proc/self/limits: %v\n%s", want, out)
	}
}

// The wrapper forwards TERM to the run's process group and reports the signal as 128+n, as
// init does on Linux; its own failures are status 125 with its name.
func TestWrapForwardsTermS6(t *testing.T) {
	cmd := wrapCmd(RunLimits{}, "/bin/sh", "-c", "echo ready; exec sleep 60")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("wrapped child said %q, %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if cmd.ProcessState.ExitCode() != 128+int(syscall.SIGTERM) {
			t.Fatalf("wrapper ended %v (status %d), want 143", err, cmd.ProcessState.ExitCode())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the wrapper did not end after TERM")
	}
	out, _ := wrapCmd(RunLimits{}, "/nonexistent/agent").CombinedOutput()
	if !strings.Contains(string(out), "anet-sandboxd "+WrapCommand+":") {
		t.Fatalf("wrapper failure output = %q, want its own prefix", out)
	}
}

// docs/architecture.md rule 5: when the launcher dies, the wrapper ends the run. The
// wrapper's parent here is a shell that exits once the run has started; the run would
// otherwise sleep far past the wait.
func TestWrapEndsTheRunWhenTheLauncherDies(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	self, _ := os.Executable()
	script := fmt.Sprintf(`%s=wrap %q /bin/sh -c 'echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 3600' >/dev/null 2>&1 &
while [ ! -s %s ]; do sleep 0.05; done`, roleEnv, self, pidfile, pidfile, pidfile, pidfile)
	if out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("launcher shell: %v: %s", err, out)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) // if the wrapper failed to
	testkit.WaitFor(t, "the run's process ended after its launcher died", func() bool {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		return len(f) > 0 && f[0] == "Z"
	})
}
