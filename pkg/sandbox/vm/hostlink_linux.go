package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/runinit"
)

// The host's side of a run's link: waiting for the guest, the handshake, and the dumb relay
// of each stream (stdio to the caller's descriptors, endpoint streams to the endpoint socket).

// connect waits for QEMU to connect the link socket (serial). Under vsock there is no
// connection to wait for: the guest's streams arrive on the run's own port, from its CID.
func (r *run) connect(ctx context.Context, ln net.Listener, t Transport, cid uint32, deadline, began time.Time) error {
	if t == TransportVsock {
		r.link = NewVsockHost(ln, cid)
		return nil
	}
	type result struct {
		c   net.Conn
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		got <- result{c, err}
	}()
	select {
	case res := <-got:
		if res.err != nil {
			return r.bootFailure("link: " + res.err.Error())
		}
		r.t.QEMU = time.Since(began)
		// QEMU connected: nothing else may; close the listener and remove the socket.
		ln.Close()
		r.conn = res.c
		var err error
		r.link, err = NewSerialHost(res.c)
		return err
	case o := <-r.innerDone:
		r.innerDone <- o
		return r.bootFailure("QEMU ended before the guest connected")
	case <-time.After(time.Until(deadline)):
		return r.bootFailure("QEMU did not connect the link in time")
	case <-ctx.Done():
		return r.bootFailure("start cancelled: " + ctx.Err().Error())
	}
}

// handshake reads the guest's Hello, sends the config, starts the stream server and waits
// for the agent to start.
func (r *run) handshake(ctx context.Context, cfg GuestConfig, deadline time.Time, stdio sandbox.Stdio, endpoint string) error {
	type accepted struct {
		k   Kind
		c   net.Conn
		err error
	}
	first := make(chan accepted, 1)
	go func() {
		for {
			k, c, err := r.link.Accept()
			if errors.Is(err, ErrForeignCID) || errors.Is(err, ErrBadKind) {
				continue // not our guest's, or not a stream: the link already closed it
			}
			first <- accepted{k, c, err}
			return
		}
	}()
	var a accepted
	select {
	case a = <-first:
	case o := <-r.innerDone:
		r.innerDone <- o
		return r.bootFailure("QEMU ended before the guest's init spoke")
	case <-time.After(time.Until(deadline)):
		return r.bootFailure("the guest's init did not open the control stream in time")
	case <-ctx.Done():
		return r.bootFailure("start cancelled: " + ctx.Err().Error())
	}
	if a.err != nil || a.k != KindControl {
		return r.bootFailure(fmt.Sprintf("first stream %c: %v", a.k, a.err))
	}
	_ = a.c.SetDeadline(deadline)
	r.ctl = newControl(a.c)
	var h Hello
	if err := r.ctl.recv(&h); err != nil {
		return r.bootFailure("hello: " + err.Error())
	}
	r.t.Kernel, r.t.Modules, r.t.Link = ms(h.KernelMS), ms(h.ModulesMS), ms(h.LinkMS)
	if err := r.ctl.send(cfg); err != nil {
		return r.bootFailure("config: " + err.Error())
	}
	go r.serveStreams(stdio, endpoint)
	var ev Event
	if err := r.ctl.recv(&ev); err != nil {
		return r.bootFailure("waiting for the agent's start: " + err.Error())
	}
	if ev.Event != "started" {
		return r.bootFailure("guest: " + ev.Detail)
	}
	r.t.Shares, r.t.Setup = ms(ev.SharesMS), ms(ev.SetupMS)
	_ = a.c.SetDeadline(time.Time{})
	go r.readEvents()
	return nil
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// bootFailure stops QEMU and returns sandbox_start_failed with what QEMU and the guest said.
func (r *run) bootFailure(what string) error {
	r.kill()
	select {
	case o := <-r.innerDone:
		r.innerDone <- o
		if o.Err != nil {
			what += "; wall: " + o.Err.Error()
		}
	case <-time.After(10 * time.Second):
	}
	msg := "guest did not start the agent: " + what
	if q := sandbox.LastLine(r.qemuErr.String()); q != "" {
		msg += "; qemu: " + q
	}
	if c := sandbox.LastLine(r.console.String()); c != "" {
		msg += "; console: " + c
	}
	return reasons.New(reasons.SandboxStartFailed, msg)
}

// serveStreams accepts the guest's streams until the link closes.
func (r *run) serveStreams(stdio sandbox.Stdio, endpoint string) {
	sem := make(chan struct{}, maxEndpointStreams)
	logf := func(format string, a ...any) {
		r.l.cfg.Log.Warn("vm link: "+fmt.Sprintf(format, a...), "id", r.plan.ID())
	}
	seen := map[Kind]bool{}
	for {
		k, c, err := r.link.Accept()
		if err != nil {
			if errors.Is(err, ErrBadKind) || errors.Is(err, ErrForeignCID) {
				continue
			}
			return
		}
		if k != KindEndpoint && seen[k] {
			c.Close() // one control and one of each stdio stream per run
			continue
		}
		seen[k] = true
		switch k {
		case KindStdout, KindStderr:
			w := stdio.Stdout
			if k == KindStderr {
				w = stdio.Stderr
			}
			r.out.Add(1)
			go func() {
				defer r.out.Done()
				if w == nil {
					w = io.Discard
				}
				_, _ = io.Copy(w, c)
				c.Close()
			}()
		case KindStdin:
			go func() {
				if stdio.Stdin != nil {
					_, _ = io.Copy(c, stdio.Stdin)
				}
				if cw, ok := c.(interface{ CloseWrite() error }); ok {
					_ = cw.CloseWrite()
				}
			}()
		case KindEndpoint:
			if endpoint == "" {
				c.Close()
				continue
			}
			select {
			case sem <- struct{}{}:
			default:
				c.Close()
				continue
			}
			go func() {
				defer func() { <-sem }()
				runinit.Join(c, runinit.UnixSocket(endpoint), logf)
			}()
		default:
			c.Close()
		}
	}
}
