package privsep

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// N2, C3: a real helper process stopped with SIGSTOP is shown unresponsive, with how long,
// and is treated as down (Peer fails with helper_down); continued, it is running again;
// stopped past KillAfter, it is killed and restarted like a crashed one.
func TestStoppedHelperIsUnresponsiveThenRestarted(t *testing.T) {
	s := startTestHelperWith(t, HelperSpec{PingEvery: 50 * time.Millisecond, PingTimeout: 300 * time.Millisecond, KillAfter: 3 * time.Second})
	pid := s.Status().PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, s, StateUnresponsive)
	if st.PID != pid {
		t.Fatalf("unresponsive status = %+v, want pid %d", st, pid)
	}
	_, err := s.Peer()
	var re *reasons.Error
	if !errors.As(err, &re) || re.Code != reasons.HelperDown || !strings.Contains(re.Detail, "unresponsive (no answer for") {
		t.Fatalf("Peer() while unresponsive = %v, want helper_down saying how long", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err = s.Call(ctx, "env", nil, nil)
	cancel()
	if !errors.As(err, &re) || re.Code != reasons.HelperDown {
		t.Fatalf("Call while unresponsive = %v, want an immediate helper_down (fail closed), not a wait", err)
	}
	time.Sleep(1100 * time.Millisecond)
	if got := s.Status(); got.State != StateUnresponsive || got.UnresponsiveSeconds < 1 {
		t.Fatalf("status after 1 s more = %+v, want unresponsive for at least 1 s", got)
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	st = waitState(t, s, StateRunning)
	if st.PID != pid || st.Restarts != 0 || st.UnresponsiveSeconds != 0 {
		t.Fatalf("status after SIGCONT = %+v, want the same process running, no restart", st)
	}
	// The spell is kept in the total (anet_helper_unresponsive_seconds_total), and a running
	// helper adds nothing to it.
	spell := st.UnresponsiveTotal
	if spell < 1100*time.Millisecond {
		t.Fatalf("unresponsive total after the first spell = %v, want at least the 1.1 s slept", spell)
	}
	time.Sleep(100 * time.Millisecond)
	if got := s.Status().UnresponsiveTotal; got != spell {
		t.Fatalf("unresponsive total grew from %v to %v while the helper answered", spell, got)
	}
	if _, err := s.Call(context.Background(), "env", nil, nil); err != nil {
		t.Fatalf("Call after SIGCONT = %v", err)
	}

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st = s.Status()
		if st.State == StateRunning && st.PID != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stopped helper not replaced: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.Restarts != 1 || !strings.Contains(st.LastError, "did not answer for") || !strings.Contains(st.LastError, "killed") {
		t.Fatalf("after the kill: %+v, want 1 restart and a last error saying why", st)
	}
	// The second spell, from the last answer to the kill (KillAfter, 3 s), is kept across
	// the restart.
	if st.UnresponsiveTotal < spell+2500*time.Millisecond {
		t.Fatalf("unresponsive total after the kill = %v, want the first spell %v and about 3 s more", st.UnresponsiveTotal, spell)
	}
	if procGone := syscall.Kill(pid, 0); !errors.Is(procGone, syscall.ESRCH) {
		// The old process may linger as a zombie only until Wait, which runOnce did.
		t.Fatalf("old helper %d still exists (kill 0 = %v)", pid, procGone)
	}
}
