package gate

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/sandbox/gate/inside"
)

// Host is the launcher's side of one gated run. Open it before the run starts, pass Files to
// init (Args says where), then Await init's checks, Judge them and Release or Refuse; Close
// ends it all.
type Host struct {
	*Canaries
	targets attack.ProbeTargets

	ctl, echo net.Conn    // the host's ends of the two streams
	child     []*os.File  // init's ends: control, echo
	closed    atomic.Bool // Close ran
}

// Open opens the canaries and the two streams for a run whose own relay listens on runPort
// (0 for none): the check's relay takes another port of the run's loopback.
func Open(runPort int) (_ *Host, err error) {
	h := &Host{}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	if h.Canaries, err = OpenCanaries(); err != nil {
		return nil, err
	}
	for _, s := range []struct {
		host  *net.Conn
		child string
	}{{&h.ctl, "anet-gate-ctl"}, {&h.echo, "anet-gate-echo"}} {
		c, f, err := streamPair(s.child)
		if err != nil {
			return nil, fmt.Errorf("gate: %w", err)
		}
		*s.host = c
		h.child = append(h.child, f)
	}
	go echoLine(h.echo)
	h.targets.RelayPort = RelayPort(runPort)
	h.Aim(&h.targets)
	return h, nil
}

// Files returns init's ends of the control and echo streams, in that order, for the launcher
// to pass to init. They are closed by Close (the launcher may close them once init started).
func (h *Host) Files() []*os.File { return h.child }

// Args returns init's flags for the gate, given the descriptor numbers the two Files have in
// init.
func (h *Host) Args(ctlFD, echoFD int) []string {
	t, _ := json.Marshal(h.targets)
	return []string{"--" + inside.FlagFDs, strconv.Itoa(ctlFD) + "," + strconv.Itoa(echoFD), "--" + inside.FlagTargets, string(t)}
}

// ErrNoReport is Await's error when the run ended, or Timeout passed, before init reported.
var ErrNoReport = errors.New("the run's init reported no probe checks")

// Await returns the checks init reported, or an error when ended is closed (the run is over),
// ctx ends or Timeout passes first, or the report is unreadable.
func (h *Host) Await(ctx context.Context, ended <-chan struct{}) ([]check.Check, error) {
	type report struct {
		checks []check.Check
		err    error
	}
	got := make(chan report, 1)
	go func() {
		line, err := bufio.NewReader(h.ctl).ReadBytes('\n')
		if err != nil {
			got <- report{err: fmt.Errorf("%w: %v", ErrNoReport, err)}
			return
		}
		var cs []check.Check
		if err := json.Unmarshal(line, &cs); err != nil || len(cs) == 0 {
			got <- report{err: fmt.Errorf("%w: unreadable report %.200q", ErrNoReport, line)}
			return
		}
		got <- report{checks: cs}
	}()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case r := <-got:
		return r.checks, r.err
	case <-ended:
		// A report written just before the run ended still counts.
		select {
		case r := <-got:
			return r.checks, r.err
		case <-time.After(100 * time.Millisecond):
		}
		return nil, fmt.Errorf("%w: the run ended first", ErrNoReport)
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrNoReport, ctx.Err())
	case <-timer.C:
		return nil, fmt.Errorf("%w within %v", ErrNoReport, Timeout)
	}
}

// Judge is Canaries.Judge of init's report against the checks this gate aimed (S7).
func (h *Host) Judge(checks []check.Check) sandbox.ProbeResult {
	return h.Canaries.Judge(checks, attack.ProbeCheckNames(h.targets))
}

// Release tells init to start the agent.
func (h *Host) Release() error {
	if _, err := h.ctl.Write([]byte{inside.Release}); err != nil {
		return fmt.Errorf("gate: release the agent: %w", err)
	}
	return nil
}

// Refuse tells init not to start the agent (a failed check, or a probe on its own).
func (h *Host) Refuse() { _, _ = h.ctl.Write([]byte{inside.Refuse}) }

// Close closes the canaries and both streams: an init still waiting for a verdict then
// starts no agent.
func (h *Host) Close() {
	if h.closed.Swap(true) {
		return
	}
	if h.Canaries != nil {
		h.Canaries.Close()
	}
	for _, c := range []net.Conn{h.ctl, h.echo} {
		if c != nil {
			c.Close()
		}
	}
	for _, f := range h.child {
		f.Close()
	}
}

// streamPair returns a connected pair of unix stream sockets: the host's end as a net.Conn
// (with deadlines), init's end as a file to pass on.
func streamPair(name string) (net.Conn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	hf := os.NewFile(uintptr(fds[0]), name+"-host")
	c, err := net.FileConn(hf)
	hf.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return c, os.NewFile(uintptr(fds[1]), name), nil
}

// echoLine answers the first line on c with itself, as a run's endpoint answers through the
// relay, and closes c.
func echoLine(c net.Conn) {
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil {
		_, _ = c.Write([]byte(line))
	}
}

// RelayPort picks the port the loopback check's relay listens on in a run whose own relay
// listens on runPort (0 for none).
func RelayPort(runPort int) int { return relayPort(randomUint16(), runPort) }

// relayPort picks the check's relay port from r: any port of the run's own loopback but the
// run's (init listens there already, and the check would then fail for nothing).
func relayPort(r uint16, runPort int) int {
	p := 47000 + int(r%2000)
	if p == runPort {
		p++
	}
	return p
}

func randomUint16() uint16 {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return uint16(b[0])<<8 | uint16(b[1])
}
