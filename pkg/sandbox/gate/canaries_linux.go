package gate

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
)

// Canaries are what the probe's host checks aim at (S7, S2): a listener on the host's
// loopback that counts every connection reaching it, and one on a random name in the host's
// abstract namespace. A probe run by a run's init (Host) and one run as a program of its own
// (launch.RunProbe) share them and their verdict, Judge.
type Canaries struct {
	tcp  net.Listener
	hits atomic.Int64
	abs  net.Listener
	name string
}

// OpenCanaries opens both listeners; Close closes them.
func OpenCanaries() (_ *Canaries, err error) {
	c := &Canaries{name: "anet-probe-" + randomHex(12)}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.tcp, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("gate: tcp canary: %w", err)
	}
	go func() {
		for {
			conn, err := c.tcp.Accept()
			if err != nil {
				return
			}
			c.hits.Add(1)
			conn.Close()
		}
	}()
	if c.abs, err = net.Listen("unix", "@"+c.name); err != nil {
		return nil, fmt.Errorf("gate: abstract canary: %w", err)
	}
	go func() {
		for {
			conn, err := c.abs.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	return c, nil
}

// Aim points t's host checks at the canaries.
func (c *Canaries) Aim(t *attack.ProbeTargets) {
	t.HostPort, t.Abstract = c.tcp.Addr().(*net.TCPAddr).Port, c.name
}

// Judge is the launcher's verdict on checks: it passes only if every check named in want
// was reported and passed, and nothing reached the host canary. A check the report lacks
// fails ("not reported"): a sandbox side that skips a check cannot pass the probe. A failed
// check gets the code of its property, whatever init wrote (F2); the first failure is the
// result's code and detail. Limits and warnings are the caller's to fill in.
func (c *Canaries) Judge(checks []check.Check, want []string) sandbox.ProbeResult {
	res := sandbox.ProbeResult{At: time.Now(), Checks: checks}
	for _, name := range want {
		if !slices.ContainsFunc(checks, func(ch check.Check) bool { return ch.Name == name }) {
			res.Checks = append(res.Checks, check.Fail(name, "S7", attack.ProbeCheckCode(name), "not reported by the sandbox"))
		}
	}
	if n := c.hits.Load(); n > 0 {
		res.Checks = append(res.Checks, check.Fail("host_tcp_canary", "S2", reasons.NetnsFailed,
			fmt.Sprintf("the host canary listener accepted %d connection(s) from the sandbox", n)))
	}
	res.OK = true
	for i, ch := range res.Checks {
		if ch.OK {
			continue
		}
		ch.Code = attack.ProbeCheckCode(ch.Name)
		res.Checks[i] = ch
		res.OK = false
		if res.Code == "" {
			res.Code, res.Detail = ch.Code, ch.Name+": "+ch.Detail
		}
	}
	return res
}

// Close closes both listeners.
func (c *Canaries) Close() {
	for _, ln := range []net.Listener{c.tcp, c.abs} {
		if ln != nil {
			ln.Close()
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
