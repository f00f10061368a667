package attack

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"anet.dev/anet/pkg/check"
)

const checkTimeout = 3 * time.Second

// ProbeChecks runs the five S7 checks from inside a run. Each is made of the battery's
// entries for that property (an attack counts as blocked only for the protection's own
// errno), so the probe and self-test cannot disagree on what a pass is. The loopback check
// also sends a line through init's relay to the host endpoint.
func ProbeChecks(t ProbeTargets) []check.Check {
	env := Env{HostTCPPort: t.HostPort, AbstractName: t.Abstract, Timeout: checkTimeout}
	return []check.Check{
		probeCheck(CheckLoopback, env, []string{"loopback"}, func() error { return checkRelay(t.RelayPort) }),
		probeCheck(CheckHostTCP, env, []string{"host_tcp"}, nil),
		probeCheck(CheckHostAbstract, env, []string{"host_abstract"}, nil),
		probeCheck(CheckKeyring, env, []string{"keyctl", "add_key"}, nil),
		probeCheck(CheckUserns, env, []string{"unshare_newuser", "clone_newuser"}, nil),
	}
}

// check runs the named attacks, then extra (if any), within checkTimeout; it passes only if
// every attack was blocked and extra returned nil.
func probeCheck(name string, env Env, attacks []string, extra func() error) check.Check {
	done := make(chan check.Check, 1)
	go func() {
		var details []string
		for _, a := range attacks {
			r := Run(a, env)
			details = append(details, r.How+": "+r.Detail)
			if !r.Blocked {
				done <- probeFailed(name, a+" not blocked ("+r.How+"): "+r.Detail)
				return
			}
		}
		if extra != nil {
			if err := extra(); err != nil {
				done <- probeFailed(name, err.Error())
				return
			}
		}
		done <- check.Pass(name, "S7", strings.Join(details, "; "))
	}()
	select {
	case c := <-done:
		return c
	case <-time.After(checkTimeout):
		return probeFailed(name, fmt.Sprintf("timed out after %v", checkTimeout))
	}
}

// checkRelay sends a line to init's loopback port and wants the host endpoint's echo.
func checkRelay(relayPort int) error {
	if relayPort == 0 {
		return nil
	}
	r, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(relayPort)), checkTimeout)
	if err != nil {
		return fmt.Errorf("connect to the relay on 127.0.0.1:%d: %w", relayPort, err)
	}
	defer r.Close()
	_ = r.SetDeadline(time.Now().Add(checkTimeout))
	if _, err := r.Write([]byte("anet-probe\n")); err != nil {
		return fmt.Errorf("write to the relay: %w", err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "anet-probe\n" {
		return fmt.Errorf("endpoint echo through the relay = %q, %v; want \"anet-probe\\n\"", line, err)
	}
	return nil
}
