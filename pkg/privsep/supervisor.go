package privsep

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// HelperSpec says how to start one helper.
type HelperSpec struct {
	// Name identifies the helper in logs and status ("sandboxd", "egress").
	Name string
	// Path is the helper binary; Args are its arguments (Args[0] is not the program name).
	Path string
	Args []string
	// Env is the helper's whole environment. Callers build it from names chosen in code,
	// never by copying the daemon's environment (docs/architecture.md rule 2).
	Env []string
	// Handlers answer requests the helper sends to the parent; may be nil.
	Handlers map[string]Handler
	// OnEvent receives the helper's events; may be nil.
	OnEvent EventFunc
	// OnReady runs after each successful hello with the helper's reply.
	OnReady func(HelloReply)
	// MinBackoff and MaxBackoff bound the restart delay; zero means 200 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// StopTimeout is how long Stop waits for the helper to exit after closing its socket
	// before it kills it; zero means 2 s.
	StopTimeout time.Duration
	// Liveness (N2): a running helper is pinged every PingEvery; one that has not answered
	// for PingTimeout is unresponsive (treated as down: Peer fails), and one silent for
	// KillAfter is killed and restarted like a crashed one. Zero means 2 s, 5 s and 30 s.
	PingEvery, PingTimeout, KillAfter time.Duration
}

// State of a helper.
type State string

const (
	StateStarting State = "starting"
	StateRunning  State = "running"
	// StateUnresponsive: the process exists but does not answer pings (N2).
	StateUnresponsive State = "unresponsive"
	StateDown         State = "down"
	StateStopped      State = "stopped"
)

// Status is what `anet status` shows of a helper. For an unresponsive helper Since is its
// last answer and UnresponsiveSeconds how long it has been silent.
type Status struct {
	Name                string         `json:"name"`
	PID                 int            `json:"pid,omitempty"`
	State               State          `json:"state"`
	Restarts            int            `json:"restarts"`
	LastError           string         `json:"last_error,omitempty"`
	Since               time.Time      `json:"since"`
	UnresponsiveSeconds int64          `json:"unresponsive_seconds,omitempty"`
	Info                map[string]any `json:"info,omitempty"`
	// UnresponsiveTotal is the time the helper spent unresponsive, each spell from its last
	// answer, over every process the supervisor ran, the current spell included (the
	// node's metrics).
	UnresponsiveTotal time.Duration `json:"-"`
}

// Supervisor keeps one helper running: it starts it, restarts it with back-off when it dies,
// and reports it unavailable (fail closed) while it is down.
type Supervisor struct {
	spec HelperSpec
	log  *slog.Logger

	mu     sync.Mutex // guards the fields below
	status Status
	// silentFor sums the unresponsive spells that ended (Status adds the current one).
	silentFor time.Duration
	peer      *Peer
	cmd       *exec.Cmd
	stop      bool
	killed    string // why the watchdog killed the current process, for LastError

	// cancel ends the supervision context: the helper's socket is closed and the helper
	// exits on EOF (or is killed after StopTimeout).
	cancel context.CancelFunc
	done   chan struct{}
}

// StartHelper starts the helper and its supervision loop; it returns at once.
func StartHelper(ctx context.Context, spec HelperSpec, log *slog.Logger) *Supervisor {
	if spec.MinBackoff == 0 {
		spec.MinBackoff = 200 * time.Millisecond
	}
	if spec.MaxBackoff == 0 {
		spec.MaxBackoff = 30 * time.Second
	}
	if spec.StopTimeout == 0 {
		spec.StopTimeout = 2 * time.Second
	}
	if spec.PingEvery == 0 {
		spec.PingEvery = 2 * time.Second
	}
	if spec.PingTimeout == 0 {
		spec.PingTimeout = 5 * time.Second
	}
	if spec.KillAfter == 0 {
		spec.KillAfter = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Supervisor{
		spec:   spec,
		log:    log.With("helper", spec.Name),
		status: Status{Name: spec.Name, State: StateStarting, Since: time.Now()},
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go s.loop(ctx)
	return s
}

// Status returns a snapshot.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.UnresponsiveTotal = s.silentFor
	if st.State == StateUnresponsive {
		st.UnresponsiveSeconds = int64(time.Since(st.Since) / time.Second)
		st.UnresponsiveTotal += time.Since(st.Since)
	}
	return st
}

// Peer returns the live connection, or an error with code helper_down while the helper is
// not running. Callers must treat that as "capability unavailable".
func (s *Supervisor) Peer() (*Peer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peer == nil || s.status.State != StateRunning {
		detail := fmt.Sprintf("%s is %s", s.spec.Name, s.status.State)
		if s.status.State == StateUnresponsive {
			detail += fmt.Sprintf(" (no answer for %s)", time.Since(s.status.Since).Round(time.Second))
		} else if s.status.LastError != "" {
			detail += ": " + s.status.LastError
		}
		return nil, reasons.New(reasons.HelperDown, detail)
	}
	return s.peer, nil
}

// Call is Peer().Call.
func (s *Supervisor) Call(ctx context.Context, method string, req, resp any, files ...*os.File) ([]*os.File, error) {
	p, err := s.Peer()
	if err != nil {
		return nil, err
	}
	return p.Call(ctx, method, req, resp, files...)
}

// Stop asks the helper to shut down, closes its socket (the helper exits on EOF), waits up
// to StopTimeout, then kills it. It returns when the helper is gone.
func (s *Supervisor) Stop(ctx context.Context) {
	s.mu.Lock()
	s.stop = true
	peer := s.peer
	s.mu.Unlock()
	if peer != nil {
		cctx, cancel := context.WithTimeout(ctx, s.spec.StopTimeout/2)
		peer.Call(cctx, MethodShutdown, nil, nil)
		cancel()
	}
	s.cancel()
	<-s.done
}

func (s *Supervisor) setState(st State, pid int, lastErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endSilence()
	s.status.State = st
	s.status.PID = pid
	s.status.Since = time.Now()
	if lastErr != "" {
		s.status.LastError = lastErr
	}
}

func (s *Supervisor) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stop
}

func (s *Supervisor) loop(ctx context.Context) {
	defer close(s.done)
	backoff := s.spec.MinBackoff
	for {
		started := time.Now()
		err := s.runOnce(ctx)
		if s.stopping() || ctx.Err() != nil {
			s.setState(StateStopped, 0, "")
			return
		}
		msg := "exited"
		if err != nil {
			msg = err.Error()
		}
		s.mu.Lock()
		s.status.Restarts++
		s.mu.Unlock()
		s.setState(StateDown, 0, msg)
		// A helper that ran for a while earns a fresh back-off; one that crashes on start
		// waits longer each time.
		if time.Since(started) > time.Minute {
			backoff = s.spec.MinBackoff
		}
		s.log.Error("helper died; restarting", "err", msg, "backoff", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		if s.stopping() || ctx.Err() != nil {
			s.setState(StateStopped, 0, "")
			return
		}
		backoff *= 2
		if backoff > s.spec.MaxBackoff {
			backoff = s.spec.MaxBackoff
		}
	}
}

// runOnce starts the helper and returns when it has exited.
func (s *Supervisor) runOnce(ctx context.Context) error {
	conn, childEnd, err := Socketpair()
	if err != nil {
		return err
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		conn.Close()
		childEnd.Close()
		return fmt.Errorf("log pipe: %w", err)
	}
	cmd := exec.Command(s.spec.Path, s.spec.Args...)
	cmd.Env = s.spec.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // never inherit: nil would mean "copy the daemon's environment"
	}
	cmd.Dir = "/"
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = logW
	cmd.Stderr = logW
	cmd.ExtraFiles = []*os.File{childEnd} // becomes fd 3; Go marks every other fd close-on-exec
	// Its own process group: a terminal's ^C reaches anetd, which stops the helpers in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Go opens every descriptor close-on-exec, but descriptors the daemon itself inherited
	// (from a shell, make's jobserver, a test runner) are not: mark them all, so nothing but
	// fds 0-3 crosses into the helper.
	if err := CloseOnExecFrom(3); err != nil {
		s.log.Warn("marking inherited descriptors close-on-exec failed; they may leak into helpers", "err", err)
	}
	s.setState(StateStarting, 0, "")
	err = cmd.Start()
	childEnd.Close()
	logW.Close()
	if err != nil {
		conn.Close()
		logR.Close()
		return fmt.Errorf("start %s: %w", s.spec.Path, err)
	}
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		s.relayLog(logR)
	}()

	peer := NewPeer(conn, s.spec.Handlers, s.spec.OnEvent, s.log)
	runDone := make(chan error, 1)
	go func() { runDone <- peer.Run(context.Background()) }()

	var hello HelloReply
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, herr := peer.Call(hctx, MethodHello, HelloRequest{Versions: []int{Version}}, &hello)
	cancel()
	if herr == nil && hello.Version != Version {
		herr = fmt.Errorf("helper speaks protocol version %d, want %d", hello.Version, Version)
	}
	if herr != nil {
		s.log.Error("helper hello failed", "err", herr)
		peer.Close()
	} else {
		s.mu.Lock()
		s.peer = peer
		s.cmd = cmd
		s.status.Info = hello.Info
		s.mu.Unlock()
		s.setState(StateRunning, cmd.Process.Pid, "")
		s.log.Info("helper running", "pid", cmd.Process.Pid)
		if s.spec.OnReady != nil {
			s.spec.OnReady(hello)
		}
	}

	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	watchDone := make(chan struct{})
	defer close(watchDone)
	if herr == nil {
		go s.watch(ctx, peer, cmd, watchDone)
	}
	var exitErr error
	select {
	case exitErr = <-waitErr:
	case <-ctx.Done():
		peer.Close()
		exitErr = s.waitOrKill(cmd, waitErr)
	case <-runDone:
		// Socket closed (by Stop or by the helper): give it StopTimeout to exit.
		exitErr = s.waitOrKill(cmd, waitErr)
	}
	s.mu.Lock()
	s.peer = nil
	s.cmd = nil
	killed := s.killed
	s.killed = ""
	s.mu.Unlock()
	peer.Close()
	<-logDone
	switch {
	case killed != "":
		return fmt.Errorf("%s (%v)", killed, exitErr)
	case herr != nil && exitErr == nil:
		return fmt.Errorf("hello: %w", herr)
	case exitErr == nil:
		return errors.New("exited with status 0")
	}
	return exitErr
}

// watch pings a running helper (N2). A helper silent for PingTimeout is unresponsive: Peer
// fails for it as for a helper that is down, so new work fails closed. One silent for
// KillAfter is killed; runOnce then returns and loop restarts it with back-off, exactly as
// after a crash. A helper that answers again is running again.
func (s *Supervisor) watch(ctx context.Context, peer *Peer, cmd *exec.Cmd, done <-chan struct{}) {
	last := time.Now()
	answered := make(chan time.Time, 1)
	inFlight := false
	tick := time.NewTicker(s.spec.PingEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case at := <-answered:
			inFlight, last = false, at
			s.answered()
			continue
		case <-tick.C:
		}
		silent := time.Since(last)
		if silent >= s.spec.KillAfter {
			why := fmt.Sprintf("did not answer for %s; killed", silent.Round(time.Second))
			s.log.Error("helper unresponsive; killing it", "pid", cmd.Process.Pid, "silent", silent.Round(time.Second).String())
			s.mu.Lock()
			s.killed = why
			s.mu.Unlock()
			cmd.Process.Kill()
			return
		}
		if silent >= s.spec.PingTimeout {
			s.unresponsive(last)
		}
		if !inFlight {
			inFlight = true
			go func() {
				// The ping waits as long as it must: an answer after the timeout still
				// brings the helper back.
				pctx, cancel := context.WithTimeout(ctx, s.spec.KillAfter)
				defer cancel()
				if _, err := peer.Call(pctx, MethodPing, nil, nil); err == nil {
					select {
					case answered <- time.Now():
					case <-done:
					}
				}
			}()
		}
	}
}

// unresponsive marks a running helper silent since last.
func (s *Supervisor) unresponsive(last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.State != StateRunning {
		return
	}
	s.status.State, s.status.Since = StateUnresponsive, last
	s.log.Warn("helper unresponsive: its capability is unavailable until it answers or is restarted", "pid", s.status.PID, "silent_since", last)
}

// answered marks an unresponsive helper running again.
func (s *Supervisor) answered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.State != StateUnresponsive {
		return
	}
	s.endSilence()
	s.status.State, s.status.Since = StateRunning, time.Now()
	s.log.Info("helper answers again", "pid", s.status.PID)
}

// endSilence adds an unresponsive spell that is ending to the total. Caller holds mu.
func (s *Supervisor) endSilence() {
	if s.status.State == StateUnresponsive {
		s.silentFor += time.Since(s.status.Since)
	}
}

func (s *Supervisor) waitOrKill(cmd *exec.Cmd, waitErr chan error) error {
	select {
	case err := <-waitErr:
		return err
	case <-time.After(s.spec.StopTimeout):
		s.log.Warn("helper did not exit after its socket closed; killing it")
		cmd.Process.Kill()
		return <-waitErr
	}
}

// relayLog re-emits the helper's stderr through the daemon's logger. Helpers write JSON
// lines (slog's JSON handler); each is re-emitted at its level with its attributes and the
// helper's name. Anything else (a panic trace) is logged as text at error level.
func (s *Supervisor) relayLog(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			s.log.Error("helper output", "line", line)
			continue
		}
		var level slog.Level
		if lv, ok := rec["level"].(string); ok {
			level.UnmarshalText([]byte(lv))
		}
		msg, _ := rec["msg"].(string)
		attrs := make([]any, 0, 2*len(rec))
		for k, v := range rec {
			if k == "time" || k == "level" || k == "msg" {
				continue
			}
			attrs = append(attrs, k, v)
		}
		s.log.Log(context.Background(), level, msg, attrs...)
	}
}
