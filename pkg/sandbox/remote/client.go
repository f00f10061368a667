// Package remote is the Launcher seam across the privsep socket between anetd and
// anet-sandboxd. Client is the sandbox.Launcher anetd holds; Handlers serve it in
// anet-sandboxd from that process's own Launcher (pkg/sandbox/launch). So anetd and every
// anet-sandboxd subcommand meet at one interface, and anetd links nothing that starts a
// process (docs/architecture.md rule 1; internal/boundaries checks it).
//
// A run is three calls: run (starts it, with the agent's stdout and stderr passed as two
// descriptors, and answers once it has started: an error means nothing started), run.wait
// (answers the outcome when every process of the run is gone) and run.stop.
package remote

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/memfd"
)

// Caller sends one request to anet-sandboxd: a *privsep.Supervisor (anetd) or a
// *privsep.Peer.
type Caller interface {
	Call(ctx context.Context, method string, req, resp any, files ...*os.File) ([]*os.File, error)
}

// Client drives anet-sandboxd. It is the only way anetd gets a process started: anetd itself
// never forks anything but its two helpers.
type Client struct {
	c Caller

	mu   sync.Mutex // guards runs
	runs map[*run]bool
}

var _ sandbox.Launcher = (*Client)(nil)

// NewClient returns the Launcher that asks anet-sandboxd through c.
func NewClient(c Caller) *Client { return &Client{c: c, runs: map[*run]bool{}} }

// Probe implements sandbox.Launcher. A helper that is down is an unavailable sandbox: the
// error carries helper_down.
func (c *Client) Probe(ctx context.Context) (sandbox.ProbeResult, error) {
	var res sandbox.ProbeResult
	if _, err := c.c.Call(ctx, sandbox.MethodProbe, nil, &res); err != nil {
		return sandbox.ProbeResult{}, err
	}
	return res, nil
}

// SelfTest asks anet-sandboxd for its self-test (sandbox.MethodSelfTest) under the limits lim:
// the probe and the attack battery, run in a real sandbox of the tier it serves with. The
// report is the battery's checks (probe.NAME, attack.NAME); an error means it could not run.
func (c *Client) SelfTest(ctx context.Context, lim sandbox.Limits) (check.Report, error) {
	var rep check.Report
	if _, err := c.c.Call(ctx, sandbox.MethodSelfTest, sandbox.SelfTestRequest{Limits: lim}, &rep); err != nil {
		return check.Report{}, err
	}
	return rep, nil
}

// Start implements sandbox.Launcher. The agent writes its stdout and stderr into anonymous
// files charged to its own run; Wait copies at most sandbox.MaxOutput of each into stdio.
// The start request is not cut short by ctx: once it is sent, only anet-sandboxd's answer
// says whether a run exists, and a run that exists is stopped when ctx ends.
func (c *Client) Start(ctx context.Context, spec sandbox.Spec, stdio sandbox.Stdio) (sandbox.Run, error) {
	if stdio.Stdin != nil {
		return nil, errors.New("run " + spec.ID + ": anet-sandboxd runs get no standard input")
	}
	stdout, err := memfd.New("anet-stdout")
	if err != nil {
		return nil, err
	}
	stderr, err := memfd.New("anet-stderr")
	if err != nil {
		stdout.Close()
		return nil, err
	}
	if _, err := c.c.Call(context.WithoutCancel(ctx), sandbox.MethodRun, sandbox.RunRequest{Spec: spec}, nil, stdout, stderr); err != nil {
		stdout.Close()
		stderr.Close()
		return nil, err
	}
	r := &run{c: c, id: spec.ID, stdio: stdio, files: [2]*os.File{stdout, stderr}, done: make(chan struct{})}
	c.mu.Lock()
	c.runs[r] = true
	c.mu.Unlock()
	go r.collect()
	go func() {
		select {
		case <-ctx.Done():
			r.Stop()
		case <-r.done:
		}
	}()
	return r, nil
}

// StopAll implements sandbox.Launcher: each run this client started is stopped, and StopAll
// returns when their outcomes are in.
func (c *Client) StopAll() {
	c.mu.Lock()
	runs := make([]*run, 0, len(c.runs))
	for r := range c.runs {
		runs = append(runs, r)
	}
	c.mu.Unlock()
	for _, r := range runs {
		go r.Stop()
	}
	for _, r := range runs {
		r.Wait()
	}
}

// run is a run in anet-sandboxd.
type run struct {
	c     *Client
	id    string
	stdio sandbox.Stdio
	files [2]*os.File
	done  chan struct{}
	out   sandbox.Outcome // set before done closes
}

// collect waits for the outcome and copies the output out.
func (r *run) collect() {
	defer close(r.done)
	defer func() {
		r.c.mu.Lock()
		delete(r.c.runs, r)
		r.c.mu.Unlock()
	}()
	var w sandbox.WireOutcome
	_, err := r.c.c.Call(context.Background(), sandbox.MethodRunWait, sandbox.RunID{ID: r.id}, &w)
	for i, dst := range []io.Writer{r.stdio.Stdout, r.stdio.Stderr} {
		if dst != nil {
			_, _ = io.Copy(dst, io.NewSectionReader(r.files[i], 0, sandbox.MaxOutput))
		}
		r.files[i].Close()
	}
	if err != nil {
		// The helper went away with the run (it ends its runs when its socket closes).
		r.out = sandbox.Outcome{ExitCode: -1, Err: reasons.New(reasons.HelperDown, "run "+r.id+": "+err.Error())}
		return
	}
	r.out = w.Decode()
}

// Wait implements sandbox.Run.
func (r *run) Wait() sandbox.Outcome {
	<-r.done
	return r.out
}

// Stop implements sandbox.Run: anet-sandboxd stops the run (TERM, grace, KILL).
func (r *run) Stop() {
	select {
	case <-r.done:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = r.c.c.Call(ctx, sandbox.MethodRunStop, sandbox.RunID{ID: r.id}, nil)
}
