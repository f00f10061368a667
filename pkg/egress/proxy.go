package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"anet.dev/anet/pkg/egress/direct"
	"anet.dev/anet/pkg/reasons"
)

// resolveDialTimeout bounds name resolution plus connecting upstream, before the 200.
const resolveDialTimeout = 15 * time.Second

// ServeHTTP handles one CONNECT request. Every check that can be answered in HTTP (syntax,
// allow-list, limits, addresses, the upstream connection) runs before the 200, so the agent
// reads an `anet:` sentence; the ClientHello checks run after it and can only close.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, ref := parseConnect(r)
	if ref == nil && !p.allow[host] {
		ref = refuse(HostNotAllowed, "host %q", host)
	}
	if ref == nil {
		ref = p.admit()
	}
	if ref != nil {
		p.deny(w, r, ref)
		return
	}
	upstream, addr, ref := p.resolveAndDial(r.Context(), host)
	if ref != nil {
		p.unadmit()
		p.deny(w, r, ref)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		p.unadmit()
		p.deny(w, r, refuse(BadConnect, "connection cannot be taken over (not HTTP/1.1)"))
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		p.unadmit()
		p.log.Warn("egress hijack", "host", host, "err", err)
		return
	}
	// Bytes the agent sent right behind the CONNECT head (often the ClientHello itself)
	// are already in the server's reader; take them before touching conn.
	early, _ := rw.Reader.Peek(rw.Reader.Buffered())
	early = append([]byte(nil), early...)
	t := &tunnel{p: p, host: host, addr: addr, client: conn, clientIO: dataConn(conn), upstream: upstream}
	if !p.register(t) {
		t.close()
		p.unadmit()
		return
	}
	// Registered before the 200, so Usage and Close see every tunnel the agent can use.
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		t.close()
		p.unregister(t)
		return
	}
	t.run(early)
}

// register adds t to the open tunnels unless the run ended meanwhile.
func (p *Proxy) register(t *tunnel) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.tunnels[t] = struct{}{}
	p.opened++
	return true
}

func (p *Proxy) unregister(t *tunnel) {
	p.mu.Lock()
	delete(p.tunnels, t)
	p.active--
	p.mu.Unlock()
}

// resolveAndDial resolves host, refuses it if any address is special-purpose (H5), and dials
// the verified addresses in answer order until one connects. It never resolves again.
func (p *Proxy) resolveAndDial(ctx context.Context, host string) (net.Conn, netip.AddrPort, *refusal) {
	ctx, cancel := context.WithTimeout(ctx, resolveDialTimeout)
	defer cancel()
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, netip.AddrPort{}, refuse(ResolveFailed, "%v", err)
	}
	if len(addrs) == 0 {
		return nil, netip.AddrPort{}, refuse(ResolveFailed, "no address")
	}
	for _, a := range addrs {
		if ok, why := ClassifyAddr(a); !ok {
			return nil, netip.AddrPort{}, refuse(AddressRefused, "%s is %s", a, why)
		}
	}
	var errs []error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a.Unmap(), tunnelPort)
		c, err := direct.Dial(ctx, "tcp", ap.String())
		if err == nil {
			return c, ap, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.AddrPort{}, refuse(DialFailed, "%v", errors.Join(errs...))
}

// deny answers a refused CONNECT and closes the connection: bytes the agent may already have
// sent behind the CONNECT must never be read as a next request.
func (p *Proxy) deny(w http.ResponseWriter, r *http.Request, ref *refusal) {
	p.countRefusal(ref.code)
	p.log.Info("egress refused", "target", reasons.Clip(r.RequestURI, 256), "reason", string(ref.code), "detail", reasons.Clip(ref.detail, 256))
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Connection", "close")
	h.Set("X-Anet-Reason", string(ref.code))
	w.WriteHeader(statusFor(ref.code))
	fmt.Fprintf(w, "anet: %s\n", reasons.Text(ref.code))
}
