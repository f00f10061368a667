package bwrap

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
)

// The in-sandbox half of the probe (S7). Each check must see the failure for the right
// reason (an errno the protection produces); any other outcome fails the check.

// ProbeTargets are what the host side opened for the checks.
type ProbeTargets struct {
	// HostPort is a TCP listener on the host's 127.0.0.1 (the canary).
	HostPort int `json:"host_port"`
	// Abstract is the name (without the leading NUL) of a host abstract unix socket.
	Abstract string `json:"abstract"`
	// RelayPort is init's loopback port; the host endpoint echoes one line.
	RelayPort int `json:"relay_port"`
}

// Probe check names.
const (
	CheckLoopback     = "loopback"
	CheckHostTCP      = "host_tcp"
	CheckHostAbstract = "host_abstract"
	CheckKeyring      = "keyring"
	CheckUserns       = "userns"
)

const checkTimeout = 3 * time.Second

// InsideChecks runs the five S7 checks from inside a run. Each is made of the attack
// battery's entries for that property (pkg/sandbox/attack counts an attack as blocked only
// for the protection's own errno), so the probe and self-test cannot disagree on what a pass
// is. The loopback check also sends a line through init's relay to the host endpoint.
func InsideChecks(t ProbeTargets) []sandbox.Check {
	env := attack.Env{HostTCPPort: t.HostPort, AbstractName: t.Abstract, Timeout: checkTimeout}
	return []sandbox.Check{
		check(CheckLoopback, env, []string{"loopback"}, func() error { return checkRelay(t.RelayPort) }),
		check(CheckHostTCP, env, []string{"host_tcp"}, nil),
		check(CheckHostAbstract, env, []string{"host_abstract"}, nil),
		check(CheckKeyring, env, []string{"keyctl", "add_key"}, nil),
		check(CheckUserns, env, []string{"unshare_newuser", "clone_newuser"}, nil),
	}
}

// check runs the named attacks, then extra (if any), within checkTimeout; it passes only if
// every attack was blocked and extra returned nil.
func check(name string, env attack.Env, attacks []string, extra func() error) sandbox.Check {
	done := make(chan sandbox.Check, 1)
	go func() {
		var details []string
		for _, a := range attacks {
			r := attack.Run(a, env)
			details = append(details, r.How+": "+r.Detail)
			if !r.Blocked {
				done <- sandbox.Check{Name: name, Detail: a + " not blocked (" + r.How + "): " + r.Detail}
				return
			}
		}
		if extra != nil {
			if err := extra(); err != nil {
				done <- sandbox.Check{Name: name, Detail: err.Error()}
				return
			}
		}
		done <- sandbox.Check{Name: name, OK: true, Detail: strings.Join(details, "; ")}
	}()
	select {
	case c := <-done:
		return c
	case <-time.After(checkTimeout):
		return sandbox.Check{Name: name, Detail: fmt.Sprintf("timed out after %v", checkTimeout)}
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
