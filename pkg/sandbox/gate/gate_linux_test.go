package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/sandbox/gate/inside"
	"anet.dev/anet/pkg/sandbox/runinit"
)

// initEnv makes this test binary act as a run's init with the gate (as anet-runinit does):
// the protocol is tested between real processes, outside any sandbox.
const initEnv = "ANET_GATE_TEST_INIT"

func TestMain(m *testing.M) {
	args := os.Args[1:]
	if len(args) == 3 && args[0] == attack.Command && args[1] == attack.ChildFlag {
		os.Exit(attack.ChildMain(args[2], os.Stdout)) // the userns check's child
	}
	if fds := os.Getenv(initEnv); fds != "" {
		logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
		g, err := inside.New(fds, os.Getenv(initEnv+"_TARGETS"), logf)
		if err != nil {
			logf("%v", err)
			os.Exit(runinit.ExitGated)
		}
		os.Exit(runinit.Init(runinit.InitOptions{Argv: args, Gate: g.Run, Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}

// startInit starts an init whose agent writes marker, with h's streams at fds 3 and 4.
func startInit(t *testing.T, h *Host, marker string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	flags := h.Args(3, 4)
	cmd := exec.Command(self, "/bin/sh", "-c", "echo ran >"+marker)
	cmd.Env = []string{initEnv + "=" + flags[1], initEnv + "_TARGETS=" + flags[3], "PATH=/usr/bin:/bin"}
	cmd.ExtraFiles = h.Files()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(time.Minute):
		t.Fatal("init did not exit within a minute")
		return -1
	}
}

// TestGateHoldsTheAgent (S7, P2): init runs the checks and reports them before any agent; the
// agent starts only on the launcher's release. Refused, or with the launcher gone, init exits
// ExitGated and the agent never ran.
func TestGateHoldsTheAgent(t *testing.T) {
	for _, verdict := range []string{"release", "refuse", "launcher gone"} {
		t.Run(verdict, func(t *testing.T) {
			h, err := Open(0)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			marker := filepath.Join(t.TempDir(), "ran")
			cmd := startInit(t, h, marker)
			checks, err := h.Await(context.Background(), make(chan struct{}))
			if err != nil {
				t.Fatalf("Await = %v", err)
			}
			names := ""
			for _, c := range checks {
				names += c.Name + " "
			}
			if names != "loopback host_tcp host_abstract keyring userns " {
				t.Fatalf("reported checks %q, want the five S7 properties", names)
			}
			// The checks are in; the agent must not have started yet.
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the agent ran before the verdict: %v", err)
			}
			switch verdict {
			case "release":
				if err := h.Release(); err != nil {
					t.Fatal(err)
				}
			case "refuse":
				h.Refuse()
			default:
				h.Close()
			}
			code := exitCode(t, cmd)
			_, statErr := os.Stat(marker)
			if verdict == "release" {
				if code != 0 || statErr != nil {
					t.Fatalf("released: init exit %d, agent's file %v; want 0 and the file", code, statErr)
				}
				return
			}
			if code != runinit.ExitGated || !errors.Is(statErr, os.ErrNotExist) {
				t.Fatalf("%s: init exit %d, agent's file %v; want %d and no file", verdict, code, statErr, runinit.ExitGated)
			}
		})
	}
}

// TestJudgeIsTheLaunchers (S7, F2): outside a sandbox the host canary is reachable, and the
// launcher fails the probe for it whatever init wrote; a failed check carries the code of its
// property, not the one in the report.
func TestJudgeIsTheLaunchers(t *testing.T) {
	h, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cmd := startInit(t, h, filepath.Join(t.TempDir(), "ran"))
	checks, err := h.Await(context.Background(), make(chan struct{}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range checks {
		// As a compromised init would claim: everything passed.
		checks[i].OK, checks[i].Code = true, ""
	}
	res := h.Judge(checks)
	last := res.Checks[len(res.Checks)-1]
	if res.OK || res.Code != reasons.NetnsFailed || last.Name != "host_tcp_canary" || !strings.Contains(last.Detail, "accepted") {
		t.Fatalf("Judge of an all-passing report while the host canary was reached = ok %v code %q last %+v; want netns_failed from host_tcp_canary", res.OK, res.Code, last)
	}
	h.Refuse()
	exitCode(t, cmd)

	checks[len(checks)-1].OK, checks[len(checks)-1].Code = false, reasons.NetnsFailed // the userns check, mislabelled
	h2, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if res := h2.Judge(checks); res.OK || res.Code != reasons.SeccompFailed {
		t.Fatalf("Judge of a failed userns check labelled %s = ok %v code %q; want seccomp_failed", reasons.NetnsFailed, res.OK, res.Code)
	}
}

// TestAwaitEndsWithTheRun: a run that ends before reporting gives ErrNoReport at once, not
// after the timeout.
func TestAwaitEndsWithTheRun(t *testing.T) {
	h, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ended := make(chan struct{})
	close(ended)
	t0 := time.Now()
	if _, err := h.Await(context.Background(), ended); !errors.Is(err, ErrNoReport) || time.Since(t0) > 10*time.Second {
		t.Fatalf("Await after the run ended = %v after %v; want ErrNoReport at once", err, time.Since(t0))
	}
}

// TestRelayPortAvoidsTheRuns: the check's relay never takes the port the run's own relay
// listens on, whatever the random draw (a clash would fail the probe for nothing).
func TestRelayPortAvoidsTheRuns(t *testing.T) {
	for r := range 1 << 16 {
		for _, run := range []int{0, 8080, 47000 + r%2000} {
			if p := relayPort(uint16(r), run); p == run || p < 1024 || p > 65535 {
				t.Fatalf("relayPort(%d, %d) = %d", r, run, p)
			}
		}
	}
}

// S7, F2: a report that leaves a check out fails the probe with that check's code: a
// sandbox side that skips a check (an old or altered anet-runinit) cannot pass.
func TestJudgeFailsAMissingCheck(t *testing.T) {
	h, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var checks []check.Check
	for _, name := range attack.ProbeCheckNames(attack.ProbeTargets{}) {
		checks = append(checks, check.Pass(name, "S7", ""))
	}
	if res := h.Judge(checks); !res.OK {
		t.Fatalf("Judge of every check passing = %+v, want a pass", res)
	}
	without := slices.DeleteFunc(slices.Clone(checks), func(c check.Check) bool { return c.Name == attack.CheckKeyring })
	res := h.Judge(without)
	if res.OK || res.Code != attack.ProbeCheckCode(attack.CheckKeyring) || !strings.Contains(res.Detail, "keyring: not reported") {
		t.Fatalf("Judge of a report without the keyring check = ok %v code %q detail %q; want %s", res.OK, res.Code, res.Detail, attack.ProbeCheckCode(attack.CheckKeyring))
	}
}
