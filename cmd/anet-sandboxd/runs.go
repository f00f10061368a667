package main

import (
	"context"
	"fmt"
	"sync"

	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// runTable tracks the runs in progress so they can be stopped by id.
type runTable struct {
	mu   sync.Mutex // guards runs
	runs map[string]sandbox.Run
}

func (t *runTable) add(id string, r sandbox.Run) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.runs[id]; dup {
		return fmt.Errorf("run %s is already running", id)
	}
	t.runs[id] = r
	return nil
}

func (t *runTable) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.runs, id)
}

func (t *runTable) get(id string) sandbox.Run {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runs[id]
}

// runHandlers answers sandbox.MethodRun and sandbox.MethodRunStop. A run's request context
// ends when anetd's connection does, and the run is stopped then.
func runHandlers(l sandbox.Launcher, lerr error) map[string]privsep.Handler {
	t := &runTable{runs: map[string]sandbox.Run{}}
	return map[string]privsep.Handler{
		sandbox.MethodRun: func(ctx context.Context, req *privsep.Request) (privsep.Reply, error) {
			defer func() {
				for _, f := range req.Files {
					f.Close()
				}
			}()
			var rr sandbox.RunRequest
			if err := req.Decode(&rr); err != nil {
				return privsep.Reply{}, err
			}
			if len(req.Files) != 2 {
				return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: fmt.Sprintf("run: want 2 descriptors (stdout, stderr), got %d", len(req.Files))}
			}
			if lerr != nil {
				// No launcher: nothing starts (P2, fail closed).
				return privsep.Reply{}, reasons.New(reasons.SandboxUnavailable, lerr.Error())
			}
			stdio := sandbox.Stdio{Stdout: req.Files[0], Stderr: req.Files[1]}
			r, err := l.Start(ctx, rr.Spec, stdio)
			if err != nil {
				if code := sandbox.CodeOf(err); code != "" {
					return privsep.Reply{}, reasons.New(code, err.Error())
				}
				return privsep.Reply{}, reasons.New(reasons.SandboxStartFailed, err.Error())
			}
			if err := t.add(rr.Spec.ID, r); err != nil {
				r.Stop()
				r.Wait()
				return privsep.Reply{}, err
			}
			defer t.remove(rr.Spec.ID)
			// The request's context ends when anetd's connection does: stop the run then.
			stopped := make(chan struct{})
			go func() {
				select {
				case <-ctx.Done():
					r.Stop()
				case <-stopped:
				}
			}()
			out := r.Wait()
			close(stopped)
			return privsep.Reply{Body: sandbox.NewWireOutcome(out)}, nil
		},
		sandbox.MethodRunStop: func(_ context.Context, req *privsep.Request) (privsep.Reply, error) {
			var sr sandbox.StopRequest
			if err := req.Decode(&sr); err != nil {
				return privsep.Reply{}, err
			}
			r := t.get(sr.ID)
			if r == nil {
				return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: "no run " + sr.ID}
			}
			r.Stop()
			return privsep.Reply{Body: map[string]bool{"stopping": true}}, nil
		},
	}
}
