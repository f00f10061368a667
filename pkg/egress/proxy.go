package egress

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// ServeHTTP handles one CONNECT request. Every check that can be answered in HTTP (syntax,
// allow-list, limits, addresses) runs before the 200, so the agent reads an `anet:` sentence.
// The ClientHello checks run after it and can only close; the upstream is dialled only once
// the hello has passed, so a refused tunnel opens no connection anywhere (H6). Every CONNECT,
// refused or not, leaves one receipt when it ends (Receipts).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rc := newReceipt(r.RequestURI, start)
	if !p.enter() {
		ref := refuse(RunOver, "proxy closed")
		p.deny(w, r, ref)
		p.record(rc, ref.code)
		return
	}
	defer p.inflight.Done()
	host, ref := parseConnect(r)
	if ref == nil && !p.allow[host] {
		ref = refuse(HostNotAllowed, "host %q", host)
	}
	if ref == nil {
		ref = p.admit()
	}
	if ref != nil {
		p.deny(w, r, ref)
		p.record(rc, ref.code)
		return
	}
	addrs, ref := p.resolve(r.Context(), host)
	if ref != nil {
		p.unadmit()
		p.deny(w, r, ref)
		p.record(rc, ref.code)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		p.unadmit()
		ref := refuse(BadConnect, "connection cannot be taken over (not HTTP/1.1)")
		p.deny(w, r, ref)
		p.record(rc, ref.code)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		p.unadmit()
		p.log.Warn("egress hijack", "host", host, "err", err)
		p.record(rc, "") // the agent's connection is gone
		return
	}
	// Bytes the agent sent right behind the CONNECT head (often the ClientHello itself)
	// are already in the server's reader; take them before touching conn.
	early, _ := rw.Reader.Peek(rw.Reader.Buffered())
	early = append([]byte(nil), early...)
	t := newTunnel(p, host, addrs, conn, p.limits.ResolveConnectTimeout-time.Since(start))
	t.rc = rc
	if !p.register(t) {
		t.close()
		p.unadmit()
		p.record(rc, RunOver)
		return
	}
	// Registered before the 200, so Usage and Close see every tunnel the agent can use.
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		t.close()
		p.unregister(t)
		p.record(rc, "") // the agent hung up before its 200
		return
	}
	t.run(early)
}

// enter counts a CONNECT in flight, so that Close can wait for its receipt; false once the
// run is over.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.inflight.Add(1)
	return true
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

// resolve resolves host and refuses it if any address is special-purpose (H5). The tunnel
// dials only these addresses, after the hello has passed; nothing resolves the name again.
func (p *Proxy) resolve(ctx context.Context, host string) ([]netip.Addr, *refusal) {
	ctx, cancel := context.WithTimeout(ctx, p.limits.ResolveConnectTimeout)
	defer cancel()
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, refuse(ResolveFailed, "%v", err)
	}
	if len(addrs) == 0 {
		return nil, refuse(ResolveFailed, "no address")
	}
	for _, a := range addrs {
		if ok, why := ClassifyAddr(a); !ok {
			return nil, refuse(AddressRefused, "%s is %s", a, why)
		}
	}
	return addrs, nil
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
	h.Set("X-Anet-Refusal", string(ref.code))
	w.WriteHeader(statusFor(ref.code))
	io.WriteString(w, refusalBody(ref.code))
}
