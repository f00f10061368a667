package attack

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"anet.dev/anet/pkg/check"
)

const checkTimeout = 3 * time.Second

// ProbeChecks runs the five S7 checks from inside a run, and the micro-VM backend's two when
// t asks for them. Each is made of the battery's
// entries for that property (an attack counts as blocked only for the protection's own
// errno), so the probe and self-test cannot disagree on what a pass is. The loopback check
// also sends a line through init's relay to the host endpoint.
func ProbeChecks(t ProbeTargets) []check.Check {
	env := Env{HostTCPPort: t.HostPort, AbstractName: t.Abstract, Timeout: checkTimeout}
	cs := []check.Check{
		probeCheck(CheckLoopback, env, []string{"loopback"}, func() error { return checkRelay(t.RelayPort) }),
		probeCheck(CheckHostTCP, env, []string{"host_tcp"}, nil),
		probeCheck(CheckHostAbstract, env, []string{"host_abstract"}, nil),
		probeCheck(CheckKeyring, env, []string{"keyctl", "add_key"}, nil),
		probeCheck(CheckUserns, env, []string{"unshare_newuser", "clone_newuser"}, nil),
	}
	if t.VM {
		cs = append(cs,
			probeCheck(CheckNetDevices, env, nil, checkOnlyLoopback),
			probeCheck(CheckHostProcess, env, nil, func() error { return checkHostProcess(t.HostPID, t.HostStart) }))
	}
	return cs
}

// checkOnlyLoopback: the run's network devices, as the kernel lists them, are lo alone.
func checkOnlyLoopback() error {
	b, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		return fmt.Errorf("read /proc/net/dev: %w", err)
	}
	var devs []string
	for _, line := range strings.Split(string(b), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok {
			devs = append(devs, strings.TrimSpace(name))
		}
	}
	if len(devs) != 1 || devs[0] != "lo" {
		return fmt.Errorf("network devices %v, want [lo] only", devs)
	}
	return nil
}

// checkHostProcess: the host's process pid (with its start time, so a guest process that
// happens to have the same number does not count) is not in the run's /proc.
func checkHostProcess(pid int, start string) error {
	if pid <= 0 || start == "" {
		return fmt.Errorf("no host process named by the host side")
	}
	got, err := ProcessStart(pid)
	if err != nil {
		return nil // not visible
	}
	if got == start {
		return fmt.Errorf("host process %d (start %s) is visible in the run's /proc", pid, start)
	}
	return nil
}

// ProcessStart returns field 22 of /proc/PID/stat, the process's start time (the host side
// of the host_process check).
func ProcessStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return f[19], nil
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
