// Package dialer is the one dialer of anet-egress that reaches the internet: model upstreams
// (pkg/modelproxy) and verified CONNECT targets (pkg/egress) are dialed here, never through a
// proxy (H7). It links the standard library alone and sits below both, so that the model
// proxy links this and not the CONNECT egress's rules and state.
package dialer

import (
	"context"
	"net"
	"time"
)

// directDialer never consults proxy settings (H7): it is a plain net.Dialer, and callers must
// build their http.Transport with Proxy: nil. The daemon's environment may name a proxy; the
// node must not route the operator's key or an agent's tunnel through it.
// Its own timeout is a backstop: callers bound each attempt with their context.
var directDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// Dial connects to addr without any proxy. addr must already be verified by the caller
// (for tunnels: a resolved and classified IP; for model upstreams: the fixed upstream host).
// Test builds (tag anettest) may redirect an address to a loopback fake after every check has
// run; release builds have no such hook (a test inspects the release binary's symbols).
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	network, addr = redirect(network, addr)
	return directDialer.DialContext(ctx, network, addr)
}
