package launch

import (
	"context"
	"sync"
	"time"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// Watch is the one watch loop every run has, whatever started it (a backend or a direct run):
// it waits for the run's process while it enforces the wall clock, the caller's cancel and a
// polled limit, and it is the one place that stops a run: terminate, grace, kill. A run
// embeds its Watch, which gives it Wait, Stop, Kill and Settled (sandbox.Run, Run, Settler).
type Watch struct {
	terminate func()
	kill      func()
	poll      func() reasons.Code
	lim       sandbox.Limits
	done      chan struct{}
	settled   chan struct{}
	outcome   sandbox.Outcome // set by Finish, before done is closed

	mu     sync.Mutex // guards the fields below
	limit  reasons.Code
	killed bool
}

// NewWatch returns the watch of one run. terminate asks the run to end (TERM to its pid 1 or
// process group); kill ends every process of it now; poll, if not nil, runs once a second and
// returns the limit the run has broken, if any (the disk limit), which kills the run.
func NewWatch(lim sandbox.Limits, terminate, kill func(), poll func() reasons.Code) *Watch {
	return &Watch{terminate: terminate, kill: kill, poll: poll, lim: lim.WithDefaults(), done: make(chan struct{}), settled: make(chan struct{})}
}

// Run returns wait's result. Until then it stops the run (terminate, grace, kill) when the
// wall clock runs out (limit wall_clock) or ctx ends, and kills it when poll reports a limit.
func (w *Watch) Run(ctx context.Context, wait func() error) error {
	waitErr := make(chan error, 1)
	go func() { waitErr <- wait() }()
	wall := time.NewTimer(w.lim.WallClock)
	defer wall.Stop()
	var tick <-chan time.Time
	if w.poll != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	cancelled := ctx.Done()
	for {
		select {
		case err := <-waitErr:
			return err
		case <-wall.C:
			w.SetLimit(sandbox.LimitWallClock)
			go w.Stop()
		case <-cancelled:
			cancelled = nil // once
			go w.Stop()
		case <-tick:
			if code := w.poll(); code != "" {
				w.SetLimit(code)
				w.Kill()
			}
		}
	}
}

// Stop is the polite end: terminate, then kill once the grace period has passed without the
// run finishing.
func (w *Watch) Stop() {
	w.terminate()
	t := time.NewTimer(w.lim.Grace)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
		w.Kill()
	}
}

// Kill ends every process of the run now (a limit, Stop's last step, StopAll).
func (w *Watch) Kill() {
	w.mu.Lock()
	w.killed = true
	w.mu.Unlock()
	w.kill()
}

// SetLimit records the limit that ends the run; the first one recorded stays.
func (w *Watch) SetLimit(c reasons.Code) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.limit == "" {
		w.limit = c
	}
}

// Limit is the limit that ended the run, "" if none.
func (w *Watch) Limit() reasons.Code {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit
}

// Killed reports whether the run was killed (by a limit, Stop or Kill).
func (w *Watch) Killed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.killed
}

// Finish marks the run over with outcome o, every process of it gone: Wait returns o, and a
// Stop in progress stops waiting for the grace period.
func (w *Watch) Finish(o sandbox.Outcome) {
	w.outcome = o
	close(w.done)
}

// Wait implements sandbox.Run: the outcome, once every process of the run is gone.
func (w *Watch) Wait() sandbox.Outcome {
	<-w.done
	return w.outcome
}

// Done is closed by Finish.
func (w *Watch) Done() <-chan struct{} { return w.done }

// Settle marks what the run made on the host (its dirs, its cgroups) removed, after Finish:
// the run is settled (Settler).
func (w *Watch) Settle() { close(w.settled) }

// Settled is closed by Settle.
func (w *Watch) Settled() <-chan struct{} { return w.settled }
