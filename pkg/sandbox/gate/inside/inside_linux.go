package inside

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/sandbox/runinit"
)

// Gate is the gate in the run's init: Run is its runinit.InitOptions.Gate.
type Gate struct {
	ctl, echo net.Conn
	targets   attack.ProbeTargets
	logf      func(string, ...any)
}

// New takes the values of init's FlagFDs and FlagTargets. The descriptors become the gate's;
// Run closes them, so none reaches the agent.
func New(fds, targets string, logf func(string, ...any)) (*Gate, error) {
	g := &Gate{logf: logf}
	if err := json.Unmarshal([]byte(targets), &g.targets); err != nil {
		return nil, fmt.Errorf("--%s: %w", FlagTargets, err)
	}
	a, b, ok := strings.Cut(fds, ",")
	if !ok {
		return nil, fmt.Errorf("--%s %q: want CTL,ECHO", FlagFDs, fds)
	}
	for _, p := range []struct {
		v    string
		conn *net.Conn
	}{{a, &g.ctl}, {b, &g.echo}} {
		fd, err := strconv.Atoi(p.v)
		if err != nil || fd < 3 {
			return nil, fmt.Errorf("--%s %q: want two descriptors above stdio", FlagFDs, fds)
		}
		f := os.NewFile(uintptr(fd), "anet-gate")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--%s: descriptor %d: %w", FlagFDs, fd, err)
		}
		*p.conn = c
	}
	return g, nil
}

// Run runs the probe's checks here, in the run's sandbox with the run's powers, reports them
// on the control stream and waits for the launcher's verdict: nil means start the agent. The
// loopback check goes through a relay of init's own, on the targets' port, to the echo stream.
func (g *Gate) Run() error {
	defer g.ctl.Close()
	defer g.echo.Close()
	// A failure to listen is not fatal here: the loopback check then fails and says why.
	if ln, err := runinit.ListenLoopback(g.targets.RelayPort); err == nil {
		go runinit.Relay(ln, &oneStream{c: g.echo}, g.logf)
		defer ln.Close()
	}
	checks := attack.ProbeChecks(g.targets)
	b, err := json.Marshal(checks)
	if err != nil {
		return fmt.Errorf("gate: report the checks: %w", err)
	}
	if _, err := g.ctl.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("gate: report the checks: %w", err)
	}
	verdict := make([]byte, 1)
	if _, err := g.ctl.Read(verdict); err != nil {
		return fmt.Errorf("gate: no verdict from the launcher: %w", err)
	}
	if verdict[0] != Release {
		return errors.New("gate: the launcher did not release the agent")
	}
	return nil
}

// oneStream is the Upstream of the check's relay: the echo stream, once.
type oneStream struct {
	mu sync.Mutex
	c  net.Conn
}

func (o *oneStream) Open(context.Context) (net.Conn, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.c
	o.c = nil
	if c == nil {
		return nil, errors.New("gate: the echo stream is taken")
	}
	return c, nil
}
