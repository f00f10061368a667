//go:build unix

package remote

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// These tests run the seam across a real privsep socketpair, with anet-sandboxd's side served
// by the real Launcher. No backend is linked here, so runs are direct (real processes) and a
// sandboxed run meets platform_unsupported: the run table, the wire and the client are what
// is under test. pkg/node's tests drive the same client against the real anet-sandboxd with
// bwrap.

type rig struct {
	client     *Client
	clientPeer *privsep.Peer
	serverPeer *privsep.Peer
	cancel     context.CancelFunc
	served     chan struct{}
}

func newRig(t *testing.T) *rig {
	t.Helper()
	l, err := launch.New(launch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, childEnd, err := privsep.Socketpair()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(childEnd.Fd()))
	childEnd.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := privsep.FromFD(uintptr(fd))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{
		clientPeer: privsep.NewPeer(a, nil, nil, log),
		serverPeer: privsep.NewPeer(b, Handlers(l), nil, log),
		cancel:     cancel,
		served:     make(chan struct{}),
	}
	go func() {
		r.serverPeer.Run(ctx)
		// As serve does: every run ends with the helper.
		l.StopAll()
		close(r.served)
	}()
	go r.clientPeer.Run(context.Background())
	r.client = NewClient(r.clientPeer)
	t.Cleanup(func() {
		r.client.StopAll()
		cancel()
		r.clientPeer.Close()
		<-r.served
	})
	return r
}

func directSpec(t *testing.T, id string, argv ...string) sandbox.Spec {
	return sandbox.Spec{ID: id, Mode: sandbox.ModeDirect, Argv: argv, RunRoot: t.TempDir(), WorkRoot: t.TempDir(), WorkSub: "peer/" + id,
		Limits: sandbox.Limits{WallClock: time.Minute, Grace: time.Second}}
}

func TestRunThroughTheSeam(t *testing.T) {
	r := newRig(t)
	res, err := sandbox.RunToEnd(context.Background(), r.client, directSpec(t, "r1", "/bin/sh", "-c", "echo out; echo err >&2; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.Outcome.Error != "" {
		t.Fatalf("run = %+v stdout %q stderr %q, want exit 3, out, err", res.Outcome, res.Stdout, res.Stderr)
	}
}

// What anetd keeps of a run's output is capped, whatever the run writes.
func TestOutputCapped(t *testing.T) {
	r := newRig(t)
	res, err := sandbox.RunToEnd(context.Background(), r.client, directSpec(t, "r2", "/bin/sh", "-c", "head -c 3000000 /dev/zero"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome.ExitCode != 0 || len(res.Stdout) != sandbox.MaxOutput {
		t.Fatalf("run writing 3 MB = exit %d, %d bytes kept; want 0 and %d", res.Outcome.ExitCode, len(res.Stdout), sandbox.MaxOutput)
	}
}

// P2, O1: a run that cannot start is an error with its reason code, and nothing ran.
func TestStartRefusedCarriesCode(t *testing.T) {
	r := newRig(t)
	marker := filepath.Join(t.TempDir(), "ran")
	spec := sandbox.Spec{ID: "s1", Mode: sandbox.ModeSandbox, Argv: []string{"/bin/sh", "-c", "touch " + marker}, RunRoot: t.TempDir()}
	_, err := r.client.Start(context.Background(), spec, sandbox.Stdio{})
	var pe *privsep.Error
	if !errors.As(err, &pe) || pe.Code != reasons.PlatformUnsupport || sandbox.CodeOf(err) != reasons.PlatformUnsupport {
		t.Fatalf("Start(sandbox) with no backend = %v, want platform_unsupported", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the sandbox is unavailable")
	}
	res, err := r.client.Probe(context.Background())
	if err != nil || res.OK || res.Code != reasons.PlatformUnsupport {
		t.Fatalf("Probe = %+v, %v; want platform_unsupported", res, err)
	}
}

// A second run under an id that is running starts nothing.
func TestDuplicateIDRefused(t *testing.T) {
	r := newRig(t)
	first, err := r.client.Start(context.Background(), directSpec(t, "dup", "/bin/sleep", "600"), sandbox.Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	_, err = r.client.Start(context.Background(), directSpec(t, "dup", "/bin/sh", "-c", "touch "+marker), sandbox.Stdio{})
	if sandbox.CodeOf(err) != reasons.BadRequest || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Start(dup) = %v, want bad_request: already running", err)
	}
	first.Stop()
	if o := first.Wait(); o.Signal != int(syscall.SIGTERM) {
		t.Fatalf("stopped run = %+v, want ended by SIGTERM", o)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the duplicate run started")
	}
}

// Ending the caller's context stops the run in anet-sandboxd (a turn cancelled by shutdown).
func TestCancelStopsRemoteRun(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	run, err := r.client.Start(ctx, directSpec(t, "c1", "/bin/sleep", "600"), sandbox.Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if o := run.Wait(); o.Signal != int(syscall.SIGTERM) {
		t.Fatalf("run after cancel = %+v, want ended by SIGTERM", o)
	}
}

// When anetd's end of the socket closes, anet-sandboxd stops every run, the client's run
// reports the helper gone, and to the auto-reply engine (RunToEnd) that is a turn with no
// outcome: an error with helper_down, as when the helper is down before the start.
func TestConnectionLossEndsRuns(t *testing.T) {
	r := newRig(t)
	marker := filepath.Join(t.TempDir(), "alive")
	type result struct {
		res sandbox.RunResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := sandbox.RunToEnd(context.Background(), r.client, directSpec(t, "l1", "/bin/sh", "-c", "trap '' TERM; touch "+marker+"; exec sleep 600"))
		done <- result{res, err}
	}()
	testkit.WaitFor(t, "the run started", func() bool { _, err := os.Stat(marker); return err == nil })
	r.clientPeer.Close()
	select {
	case got := <-done:
		if sandbox.CodeOf(got.err) != reasons.HelperDown {
			t.Fatalf("RunToEnd after the connection closed = %+v, %v; want an error with helper_down", got.res, got.err)
		}
	case <-time.After(testkit.Wait):
		t.Fatal("RunToEnd did not return after the connection closed")
	}
	select {
	case <-r.served:
	case <-time.After(testkit.Wait):
		t.Fatal("the server side did not end its runs")
	}
}

// The client's StopAll stops every run it started and returns when they are gone.
func TestClientStopAll(t *testing.T) {
	r := newRig(t)
	var runs []sandbox.Run
	for _, id := range []string{"a1", "a2"} {
		run, err := r.client.Start(context.Background(), directSpec(t, id, "/bin/sleep", "600"), sandbox.Stdio{})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	r.client.StopAll()
	for _, sr := range runs {
		select {
		case <-sr.(*run).done:
		default:
			t.Fatal("StopAll returned before a run ended")
		}
	}
}

// The run table refuses malformed requests: the wrong descriptors, an unknown id.
func TestRunTableRefusals(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	_, err := r.clientPeer.Call(ctx, sandbox.MethodRun, sandbox.RunRequest{Spec: directSpec(t, "f1", "/bin/true")}, nil)
	if sandbox.CodeOf(err) != reasons.BadRequest || !strings.Contains(err.Error(), "2 descriptors") {
		t.Fatalf("run without descriptors = %v, want bad_request", err)
	}
	for _, m := range []string{sandbox.MethodRunWait, sandbox.MethodRunStop} {
		if _, err := r.clientPeer.Call(ctx, m, sandbox.RunID{ID: "nope"}, nil); sandbox.CodeOf(err) != reasons.BadRequest {
			t.Fatalf("%s of an unknown run = %v, want bad_request", m, err)
		}
	}
}
