package bwrap

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/sandbox"
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

// InsideChecks runs the five S7 checks from inside a run.
func InsideChecks(t ProbeTargets) []sandbox.Check {
	return []sandbox.Check{
		check(CheckLoopback, func() error { return checkLoopback(t.RelayPort) }),
		check(CheckHostTCP, func() error { return refused("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(t.HostPort))) }),
		check(CheckHostAbstract, func() error { return refused("unix", "@"+t.Abstract) }),
		check(CheckKeyring, checkKeyring),
		check(CheckUserns, checkUserns),
	}
}

func check(name string, f func() error) sandbox.Check {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			return sandbox.Check{Name: name, OK: false, Detail: err.Error()}
		}
		return sandbox.Check{Name: name, OK: true, Detail: okDetail[name]}
	case <-time.After(checkTimeout):
		return sandbox.Check{Name: name, OK: false, Detail: fmt.Sprintf("timed out after %v", checkTimeout)}
	}
}

var okDetail = map[string]string{
	CheckLoopback:     "127.0.0.1 works inside and the relay reaches the endpoint",
	CheckHostTCP:      "host loopback port refused (ECONNREFUSED): own network namespace",
	CheckHostAbstract: "host abstract socket refused (ECONNREFUSED): own network namespace",
	CheckKeyring:      "keyctl and add_key denied (EPERM)",
	CheckUserns:       "unshare and clone with CLONE_NEWUSER denied",
}

func checkLoopback(relayPort int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("x"))
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), checkTimeout)
	if err != nil {
		return fmt.Errorf("connect to own listener: %w", err)
	}
	b := make([]byte, 1)
	_, err = c.Read(b)
	c.Close()
	if err != nil {
		return fmt.Errorf("read from own listener: %w", err)
	}
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

// refused wants ECONNREFUSED: the address exists in the run's own namespace and nothing
// listens there. Success means the host is reachable; another error is not the protection.
func refused(network, addr string) error {
	c, err := net.DialTimeout(network, addr, checkTimeout)
	if err == nil {
		c.Close()
		return fmt.Errorf("connected to host %s %s: the network namespace is shared", network, addr)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil
	}
	return fmt.Errorf("connect %s %s: %v (want ECONNREFUSED)", network, addr, err)
}

func checkKeyring() error {
	_, _, e1 := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffd) /* KEY_SPEC_SESSION_KEYRING */, 0)
	if e1 != unix.EPERM {
		return fmt.Errorf("keyctl(KEYCTL_GET_KEYRING_ID) = %v, want EPERM", errOrOK(e1))
	}
	typ, _ := unix.BytePtrFromString("user")
	desc, _ := unix.BytePtrFromString("anet-probe")
	_, _, e2 := unix.Syscall6(unix.SYS_ADD_KEY, uintptr(unsafePtr(typ)), uintptr(unsafePtr(desc)), 0, 0, uintptr(0xfffffffd), 0)
	if e2 != unix.EPERM {
		return fmt.Errorf("add_key = %v, want EPERM", errOrOK(e2))
	}
	return nil
}

// checkUserns tries both ways in a child (unshare(CLONE_NEWUSER) in a multi-threaded process
// always fails with EINVAL, which would prove nothing). EPERM is the seccomp filter; ENOSPC is
// bwrap's --disable-userns (max_user_namespaces = 1).
func checkUserns() error {
	for _, attr := range []struct {
		name string
		sys  *syscall.SysProcAttr
	}{
		{"unshare(CLONE_NEWUSER)", &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWUSER}},
		{"clone(CLONE_NEWUSER)", &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}},
	} {
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Sys: attr.sys})
		if err == nil {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
			return fmt.Errorf("%s succeeded: nested user namespaces are allowed", attr.name)
		}
		if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("%s: %v (want EPERM or ENOSPC)", attr.name, err)
		}
	}
	return nil
}

func errOrOK(e syscall.Errno) string {
	if e == 0 {
		return "success"
	}
	return unix.ErrnoName(e)
}
