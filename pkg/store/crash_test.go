package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashChildEnv makes the test binary act as the appending child of TestCrashSafety.
const crashChildEnv = "ANET_STORE_CRASH_CHILD_DB"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		os.Exit(crashChild(path))
	}
	os.Exit(m.Run())
}

// crashChild appends from four goroutines at once (so commits are grouped) until it is
// killed, printing each sequence number after Append has returned, i.e. after the commit.
func crashChild(path string) int {
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	signer := newSeedSigner(1)
	var mu sync.Mutex
	fail := make(chan int)
	for w := range 4 {
		go func() {
			for i := 0; ; i++ {
				e, err := s.Append(context.Background(), signer, EntryInput{
					Kind: "turn_completed", Peer: goldenPeer, Details: map[string]any{"w": w, "i": i, "counted": true},
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					fail <- 3
					return
				}
				// Unbuffered: the parent must never see a sequence number that was not committed.
				mu.Lock()
				_, err = fmt.Fprintln(os.Stdout, e.Seq)
				mu.Unlock()
				if err != nil {
					fail <- 4
					return
				}
			}
		}()
	}
	return <-fail
}

// TestCrashSafety SIGKILLs a process in the middle of appending (grouped commits of four
// concurrent appenders) and checks that the chain
// it leaves is whole and holds every entry the process reported as committed (B5, B7: the
// budget is rebuilt from this chain after a crash).
func TestCrashSafety(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anet.db")
	// Start with a few entries from this process, so the child appends to an existing chain.
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, newSeedSigner(1), 3)
	s.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	// Generous deadline for a loaded machine; the kill happens as soon as 200 are reported.
	const minAppends = 200
	deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	var lastAck int64
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		n, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("child printed %q: %v", sc.Text(), err)
		}
		lastAck = max(lastAck, n)
		if lastAck >= 3+minAppends {
			break
		}
	}
	if lastAck < 3+minAppends {
		t.Fatalf("child stopped after seq %d, before %d appends (stderr: %s)", lastAck, minAppends, stderr.String())
	}
	// Kill while the child is still in its loop: it is appending right now.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	waitErr := cmd.Wait()
	killed = true
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL (stderr: %s)", waitErr, stderr.String())
	}

	s, err = Open(path)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer s.Close()
	res, err := s.Verify(context.Background(), newSeedSigner(1).Public())
	if err != nil {
		t.Fatalf("Verify after crash = %v, want a whole chain", err)
	}
	// Every reported entry survived; at most the few appended after the last line we read
	// (including one in flight at the kill) are there too, never a partial one.
	if res.Entries < lastAck {
		t.Errorf("chain after crash has %d entries, want at least %d (every committed entry)", res.Entries, lastAck)
	}
	// The chain stays appendable after the crash.
	e, err := s.Append(context.Background(), newSeedSigner(1), EntryInput{Kind: "task_received"})
	if err != nil || e.Seq != res.Entries+1 {
		t.Errorf("Append after crash = seq %d, %v; want %d, nil", e.Seq, err, res.Entries+1)
	}
	t.Logf("child reported %d, chain has %d after SIGKILL", lastAck, res.Entries)
}
