package remote

import (
	"context"
	"fmt"
	"os"
	"sync"

	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// Handlers answer anetd's sandbox methods on anet-sandboxd's privsep socket with l: probe,
// run, run.wait and run.stop. Every run starts with the connection's context, so when anetd's
// end closes (or anetd dies) each run it started is stopped.
func Handlers(l sandbox.Launcher) map[string]privsep.Handler {
	t := &runTable{l: l, runs: map[string]*entry{}}
	return map[string]privsep.Handler{
		sandbox.MethodProbe:   t.probe,
		sandbox.MethodRun:     t.run,
		sandbox.MethodRunWait: t.wait,
		sandbox.MethodRunStop: t.stop,
	}
}

// runTable holds the runs anetd started, by id, until anetd has collected their outcome.
type runTable struct {
	l sandbox.Launcher

	mu   sync.Mutex // guards runs
	runs map[string]*entry
}

// entry is one run; run is nil while it is starting.
type entry struct {
	run     sandbox.Run
	done    chan struct{} // closed when the run has ended; outcome is set then
	outcome sandbox.WireOutcome
}

func (t *runTable) probe(ctx context.Context, _ *privsep.Request) (privsep.Reply, error) {
	res, err := t.l.Probe(ctx)
	if err != nil {
		// Fail closed: a probe that could not run is a sandbox that is not available.
		res = sandbox.ProbeFailed(sandbox.CodeOf(err), err.Error())
	}
	return privsep.Reply{Body: res}, nil
}

// run starts a run and answers once it has started; an error means nothing started.
func (t *runTable) run(ctx context.Context, req *privsep.Request) (privsep.Reply, error) {
	var rr sandbox.RunRequest
	if err := req.Decode(&rr); err != nil {
		closeFiles(req.Files)
		return privsep.Reply{}, err
	}
	if len(req.Files) != 2 {
		closeFiles(req.Files)
		return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: fmt.Sprintf("run: want 2 descriptors (stdout, stderr), got %d", len(req.Files))}
	}
	id := rr.Spec.ID
	e := &entry{done: make(chan struct{})}
	// The id is taken before anything starts: a second run of the same id starts nothing.
	t.mu.Lock()
	if _, dup := t.runs[id]; dup {
		t.mu.Unlock()
		closeFiles(req.Files)
		return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: fmt.Sprintf("run %s is already running", id)}
	}
	t.runs[id] = e
	t.mu.Unlock()
	r, err := t.l.Start(ctx, rr.Spec, sandbox.Stdio{Stdout: req.Files[0], Stderr: req.Files[1]})
	if err != nil {
		t.remove(id)
		closeFiles(req.Files)
		if code := sandbox.CodeOf(err); code != "" {
			return privsep.Reply{}, reasons.New(code, err.Error())
		}
		return privsep.Reply{}, reasons.New(reasons.SandboxStartFailed, err.Error())
	}
	t.mu.Lock()
	e.run = r
	t.mu.Unlock()
	go func() {
		e.outcome = sandbox.NewWireOutcome(r.Wait())
		closeFiles(req.Files)
		close(e.done)
	}()
	return privsep.Reply{Body: map[string]bool{"started": true}}, nil
}

// wait answers the run's outcome once it has ended, and forgets the run.
func (t *runTable) wait(ctx context.Context, req *privsep.Request) (privsep.Reply, error) {
	e, id, err := t.lookup(req)
	if err != nil {
		return privsep.Reply{}, err
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		return privsep.Reply{}, ctx.Err()
	}
	t.remove(id)
	return privsep.Reply{Body: e.outcome}, nil
}

// stop ends the run (TERM, grace, KILL) and answers when that is done.
func (t *runTable) stop(_ context.Context, req *privsep.Request) (privsep.Reply, error) {
	e, id, err := t.lookup(req)
	if err != nil {
		return privsep.Reply{}, err
	}
	t.mu.Lock()
	r := e.run
	t.mu.Unlock()
	if r == nil {
		return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: "run " + id + " is still starting"}
	}
	r.Stop()
	return privsep.Reply{Body: map[string]bool{"stopping": true}}, nil
}

func (t *runTable) lookup(req *privsep.Request) (*entry, string, error) {
	var in sandbox.RunID
	if err := req.Decode(&in); err != nil {
		return nil, "", err
	}
	t.mu.Lock()
	e := t.runs[in.ID]
	t.mu.Unlock()
	if e == nil {
		return nil, in.ID, &privsep.Error{Code: reasons.BadRequest, Message: "no run " + in.ID}
	}
	return e, in.ID, nil
}

func (t *runTable) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.runs, id)
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
