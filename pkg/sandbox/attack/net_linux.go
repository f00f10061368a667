package attack

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
)

// checkLoopback listens and connects on 127.0.0.1 inside: the run's own loopback must work,
// or "host_tcp refused" proves nothing (S7 property 1).
func checkLoopback(env Env) Result {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return notBlocked("error", fmt.Sprintf("listen on 127.0.0.1: %v", err))
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, err = c.Write([]byte("anet"))
			c.Close()
		}
		accepted <- err
	}()
	d := net.Dialer{Timeout: env.timeout()}
	c, err := d.Dial("tcp4", ln.Addr().String())
	if err != nil {
		return notBlocked("error", fmt.Sprintf("connect to own listener %s: %v", ln.Addr(), err))
	}
	defer c.Close()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "anet" {
		return notBlocked("error", fmt.Sprintf("read from own listener: %q, %v", buf, err))
	}
	if err := <-accepted; err != nil {
		return notBlocked("error", fmt.Sprintf("accept on own listener: %v", err))
	}
	return blocked("ok", "listen, connect and a round trip on 127.0.0.1 work")
}

// attackHostTCP connects to the host's loopback canary port. In a new netns 127.0.0.1 is the
// run's own loopback, where nothing listens on that port: ECONNREFUSED (S7 property 2). The
// launcher must not pick the run's own bridge port for the canary.
func attackHostTCP(env Env) Result {
	if env.HostTCPPort == 0 {
		return notConfigured("HostTCPPort")
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(env.HostTCPPort))
	d := net.Dialer{Timeout: env.timeout()}
	c, err := d.Dial("tcp4", addr)
	if err == nil {
		c.Close()
	}
	return expectErrno("connect to host canary "+addr, err, syscall.ECONNREFUSED)
}

// attackExternalIP connects to a public address: with only lo in the netns there is no
// route (ENETUNREACH), not a timeout.
func attackExternalIP(env Env) Result {
	addr := env.ExternalAddr
	if addr == "" {
		addr = DefaultExternalAddr
	}
	d := net.Dialer{Timeout: env.timeout()}
	c, err := d.Dial("tcp", addr)
	if err == nil {
		c.Close()
	}
	return expectErrno("connect to "+addr, err, syscall.ENETUNREACH)
}

// attackHostAbstract connects to the host's abstract unix socket canary. Abstract sockets
// live in the network namespace, so the name does not exist in the run's (S7 property 3).
func attackHostAbstract(env Env) Result {
	if env.AbstractName == "" {
		return notConfigured("AbstractName")
	}
	d := net.Dialer{Timeout: env.timeout()}
	c, err := d.Dial("unix", "@"+env.AbstractName)
	if err == nil {
		c.Close()
	}
	return expectErrno("connect to host abstract socket", err, syscall.ECONNREFUSED)
}

// attackRuntimeSocket connects to a host socket under $XDG_RUNTIME_DIR: the directory must
// not be visible at all (ENOENT), since a read-only bind would not stop connect().
func attackRuntimeSocket(env Env) Result {
	if env.RuntimeSocket == "" {
		return notConfigured("RuntimeSocket")
	}
	d := net.Dialer{Timeout: env.timeout()}
	c, err := d.Dial("unix", env.RuntimeSocket)
	if err == nil {
		c.Close()
	}
	return expectErrno("connect to host runtime-dir socket "+env.RuntimeSocket, err, syscall.ENOENT)
}
