//go:build anettest

package egress

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// TestRealClientsThroughTunnel: curl (OpenSSL) and Python's urllib (the stack under pip;
// it sends CONNECT as HTTP/1.0) fetch through the proxy from the TLS fake, verifying it
// against the throw-away CA. Their ClientHellos pass H6 and their CONNECTs pass H4.
func TestRealClientsThroughTunnel(t *testing.T) {
	up := startTLSUpstream(t)
	redirectTo(t, pypiIP+":443", up.addr)
	tp := startProxy(t, Policy{Allow: []string{"pypi.org"}},
		&countingResolver{table: map[string][]netip.Addr{"pypi.org": addrs(pypiIP)}})
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, theCA(t).PEM, 0o600); err != nil {
		t.Fatalf("write CA: %v", err)
	}
	proxyURL := "http://" + tp.addr
	const py = `import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[1])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"https": sys.argv[2]}), urllib.request.HTTPSHandler(context=ctx))
sys.stdout.write(opener.open("https://pypi.org/simple/", timeout=30).read().decode())`
	cases := []struct {
		name string
		argv []string
	}{
		{"curl", []string{"curl", "-sS", "--fail", "--max-time", "30", "--cacert", caFile, "--proxy", proxyURL, "https://pypi.org/simple/"}},
		{"python urllib", []string{"python3", "-c", py, caFile, proxyURL}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.argv[0]); err != nil {
				t.Fatalf("%s is needed for this test and is not installed: %v", c.argv[0], err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "upstream saw pypi.org /simple/" {
				t.Fatalf("%s through the tunnel = %q, %v; want the upstream's answer\nproxy log:\n%s", c.name, out, err, tp.logText())
			}
		})
	}
	testkit.WaitFor(t, "tunnels to end", func() bool { return tp.p.Usage().TunnelsOpen == 0 })
	if u := tp.p.Usage(); len(u.Refusals) != 0 || u.TunnelsOpened != len(cases) {
		t.Fatalf("usage = %+v, want %d tunnels and no refusal", u, len(cases))
	}
}
