//go:build anettest

package dialer

import (
	"os"
	"strings"
	"sync"
)

var (
	testRedirectMu sync.RWMutex
	testRedirects  = map[string]string{}
)

// TestRedirectEnv names the variable through which end-to-end tests configure redirects in
// a test-built anet-egress process: "from=to,from=to" (host:port each). Release builds have
// neither this variable nor the code that reads it.
const TestRedirectEnv = "ANET_TEST_REDIRECTS"

func init() {
	for _, pair := range strings.Split(os.Getenv(TestRedirectEnv), ",") {
		if from, to, ok := strings.Cut(pair, "="); ok {
			AnetTestRedirect(from, to)
		}
	}
}

// AnetTestRedirect makes Dial connect to `to` whenever it is asked for `from` (both
// host:port, or `to` as "unix:PATH" for a unix socket). It exists only in test builds so that
// tests can point api.anthropic.com:443 or a verified public address at a loopback fake after
// every rule has been applied, and `make demo` at its stand-in model service, which listens on
// a unix socket only: no release build can reach it. Passing an empty `to` removes the
// redirect.
func AnetTestRedirect(from, to string) {
	testRedirectMu.Lock()
	defer testRedirectMu.Unlock()
	if to == "" {
		delete(testRedirects, from)
		return
	}
	testRedirects[from] = to
}

func redirect(network, addr string) (string, string) {
	testRedirectMu.RLock()
	defer testRedirectMu.RUnlock()
	to, ok := testRedirects[addr]
	if !ok {
		return network, addr
	}
	if path, ok := strings.CutPrefix(to, "unix:"); ok {
		return "unix", path
	}
	return network, to
}
