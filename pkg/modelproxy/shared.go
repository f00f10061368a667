package modelproxy

import (
	"crypto/x509"
	"net/http"
	"sync"

	"anet.dev/anet/pkg/modelproxy/upstream"
)

// Runs share upstream connections: one transport per (upstream, trust store), used by every
// proxy open on it. A new run then reuses a warm TLS connection instead of paying a fresh
// handshake, and a finished run leaves nothing behind: when the last proxy using a transport
// closes, its idle connections are closed with it.
//
// Nothing of one run can reach another through the transport: it holds connections only.
// The key is added per request in Rewrite, the header set is built from nothing for every
// request, and an http.Transport keeps no cookies.

type transportKey struct {
	scheme, host string
	roots        *x509.CertPool // nil: the system store
}

type sharedTransport struct {
	tr    *http.Transport
	users int
}

var shared struct {
	mu sync.Mutex // guards m
	m  map[transportKey]*sharedTransport
}

// acquireTransport returns the transport for up verified with roots, and the function that
// gives it back. Each acquire must be released exactly once.
func acquireTransport(up upstream.Upstream, roots *x509.CertPool) (*http.Transport, func()) {
	k := transportKey{scheme: up.Scheme, host: up.Host, roots: roots}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.m == nil {
		shared.m = map[transportKey]*sharedTransport{}
	}
	st := shared.m[k]
	if st == nil {
		st = &sharedTransport{tr: NewTransport(roots)}
		shared.m[k] = st
		if roots == nil {
			warmSystemRoots()
		}
	}
	st.users++
	var once sync.Once
	return st.tr, func() { once.Do(func() { releaseTransport(k, st) }) }
}

func releaseTransport(k transportKey, st *sharedTransport) {
	shared.mu.Lock()
	st.users--
	last := st.users == 0
	if last {
		delete(shared.m, k)
	}
	shared.mu.Unlock()
	if last {
		// No run needs these connections any more; keeping them would hold a socket and the
		// upstream's TLS session for nobody.
		st.tr.CloseIdleConnections()
	}
}

var warmRoots sync.Once

// warmSystemRoots loads the system store once per process, in the background, when the first
// run that needs it opens: the first model request of that run then does not wait for every
// file of the certificate directory to be read and parsed. Go caches the store for the life
// of the process, so this is the only load.
func warmSystemRoots() {
	warmRoots.Do(func() { go x509.SystemCertPool() })
}
