package privsep

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/reasons"
)

// S8: a helper's self-test runs one at a time over its socket: a second request waits for the
// first and then runs; one that overruns its limit is answered with a timeout, and the next
// waits until it has really ended; one that waits longer than the limit is refused as busy.
func TestOneAtATimeS8(t *testing.T) {
	a, b := pair(t, unix.SOCK_SEQPACKET)
	var running, most atomic.Int32
	release := make(chan struct{})
	const limit = 2 * time.Second
	h := OneAtATime("selftest", limit, func(ctx context.Context, r *Request) (Reply, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		var in struct{ Hold bool }
		r.Decode(&in)
		if in.Hold {
			// Overruns: ignores ctx until released.
			<-release
			return Reply{Body: "late"}, nil
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return Reply{}, ctx.Err()
		}
		return Reply{Body: "done"}, nil
	})
	server := NewPeer(b, map[string]Handler{"selftest": h}, nil, nil)
	client := NewPeer(a, nil, nil, nil)
	ctx := context.Background()
	go server.Run(ctx)
	go client.Run(ctx)

	call := func(hold bool) (string, error) {
		var out string
		_, err := client.Call(ctx, "selftest", map[string]bool{"Hold": hold}, &out)
		return out, err
	}
	// Two at once: both answered, never both running.
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			out, err := call(false)
			if err == nil && out != "done" {
				err = errors.New("answer " + out)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent self-test: %v", err)
		}
	}
	if most.Load() != 1 {
		t.Fatalf("%d self-tests ran at once, want 1", most.Load())
	}

	// One that overruns is answered with a timeout when its limit is up.
	start := time.Now()
	_, err := call(true)
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != reasons.Internal || !strings.Contains(pe.Message, "did not finish within") {
		t.Fatalf("overrunning self-test = %v, want a timeout", err)
	}
	if d := time.Since(start); d < limit || d > limit+time.Second {
		t.Fatalf("timeout after %s, want about %s", d, limit)
	}
	// It still runs: the next waits, and is refused as busy when it has waited the limit.
	if _, err := call(false); !errors.As(err, &pe) || !strings.Contains(pe.Message, "busy") {
		t.Fatalf("self-test behind an overrunning one = %v, want busy", err)
	}
	// Once it has ended, the next runs.
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for running.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if out, err := call(false); err != nil || out != "done" {
		t.Fatalf("self-test after the overrun ended = %q, %v", out, err)
	}
	if most.Load() != 1 {
		t.Fatalf("%d self-tests ran at once, want 1", most.Load())
	}
}
