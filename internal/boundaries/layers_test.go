package boundaries

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The module's import graph, stated (C2): every package in groups from the ground up, each
// with the packages of the module it may import. An import must point down: to an earlier
// group, or to a package earlier in its own group. A new package, or a new import, is a line
// here, read in review beside the change; an import nothing makes any more is a stale line and
// fails too, so the table stays the graph. In the spirit of tailscale's deptest: the build
// graph is the fact, checked for every platform the node targets (Linux, macOS, and FreeBSD
// for a platform without a sandbox) with and without the test hooks.
var layers = []struct {
	name string
	pkgs []allowed
}{
	{"ground: facts and primitives that import nothing of the module", []allowed{
		{"pkg/reasons", nil},
		{"pkg/limits", nil},
		{"pkg/money", nil},
		{"pkg/canonical", nil},
		{"pkg/hostname", nil},
		{"pkg/termsafe", nil},
		{"pkg/helperpath", nil},
		{"pkg/nodedirs", nil},
		{"pkg/logging", nil},
		{"pkg/identity", nil},
		{"pkg/secret", nil},
		{"pkg/dialer", nil},
		{"pkg/loopback", nil},
		{"pkg/localca", nil},
		{"pkg/linksafe", nil},
		{"pkg/httprecord", nil},
		{"pkg/modelproxy/jsontree", nil},
		{"pkg/sandbox/memfd", nil},
		{"pkg/sandbox/runinit", nil},
		{"pkg/peer/admission", nil},
		{"pkg/metrics", nil},
	}},
	{"shared rules: one concern each, on the ground only", []allowed{
		{"pkg/check", []string{"pkg/reasons"}},
		{"pkg/peeraddr", []string{"pkg/reasons", "pkg/hostname"}},
		{"pkg/modelproxy/upstream", []string{"pkg/reasons"}},
		{"pkg/privsep", []string{"pkg/reasons"}},
		{"pkg/sandbox/seccomp", []string{"pkg/sandbox/memfd"}},
		{"pkg/sandbox/vm/guestimage", []string{"pkg/reasons"}},
		{"pkg/modelproxy/standin", []string{"pkg/limits", "pkg/localca"}},
		{"pkg/receipt", []string{"pkg/reasons", "pkg/money"}},
	}},
	{"the node's data: configuration, the run spec, the wire, the store", []allowed{
		{"pkg/config", []string{"pkg/reasons", "pkg/limits", "pkg/money", "pkg/hostname", "pkg/nodedirs", "pkg/modelproxy/upstream"}},
		{"pkg/egresswire", []string{"pkg/limits", "pkg/money", "pkg/modelproxy/upstream"}},
		{"pkg/sandbox", []string{"pkg/reasons", "pkg/limits", "pkg/linksafe", "pkg/check"}},
		{"pkg/store", []string{"pkg/reasons", "pkg/canonical", "pkg/peeraddr", "pkg/receipt"}},
		{"pkg/modelproxy/rules", []string{"pkg/reasons", "pkg/limits", "pkg/money", "pkg/modelproxy/jsontree", "pkg/modelproxy/upstream"}},
		{"pkg/sandbox/attack", []string{"pkg/reasons", "pkg/check"}},
	}},
	{"mechanisms: what enforces the rules", []allowed{
		{"pkg/keys", []string{"pkg/secret", "pkg/config"}},
		{"pkg/preflight", []string{"pkg/reasons", "pkg/helperpath", "pkg/modelproxy/upstream", "pkg/config"}},
		{"pkg/agents", []string{"pkg/reasons", "pkg/limits", "pkg/sandbox"}},
		{"pkg/peer", []string{"pkg/reasons", "pkg/limits", "pkg/canonical", "pkg/identity", "pkg/peer/admission", "pkg/peeraddr", "pkg/store"}},
		{"pkg/egress", []string{"pkg/reasons", "pkg/limits", "pkg/hostname", "pkg/dialer", "pkg/receipt", "pkg/config"}},
		{"pkg/modelproxy/metering", []string{"pkg/reasons", "pkg/limits", "pkg/money", "pkg/modelproxy/jsontree", "pkg/modelproxy/upstream", "pkg/modelproxy/rules"}},
		{"pkg/modelproxy", []string{"pkg/reasons", "pkg/limits", "pkg/money", "pkg/secret", "pkg/dialer", "pkg/modelproxy/upstream", "pkg/receipt", "pkg/modelproxy/rules", "pkg/modelproxy/metering"}},
		{"pkg/sandbox/remote", []string{"pkg/reasons", "pkg/sandbox/memfd", "pkg/check", "pkg/privsep", "pkg/sandbox"}},
		{"pkg/sandbox/gate/inside", []string{"pkg/sandbox/runinit", "pkg/sandbox/attack"}},
		{"pkg/sandbox/gate", []string{"pkg/reasons", "pkg/check", "pkg/sandbox", "pkg/sandbox/attack", "pkg/sandbox/gate/inside"}},
		{"pkg/sandbox/launch", []string{"pkg/reasons", "pkg/linksafe", "pkg/check", "pkg/sandbox", "pkg/sandbox/attack", "pkg/sandbox/gate"}},
		{"pkg/sandbox/bwrap", []string{"pkg/reasons", "pkg/helperpath", "pkg/linksafe", "pkg/sandbox/memfd", "pkg/sandbox/runinit", "pkg/sandbox/seccomp", "pkg/sandbox", "pkg/sandbox/gate", "pkg/sandbox/launch"}},
		{"pkg/sandbox/seatbelt", []string{"pkg/reasons", "pkg/nodedirs", "pkg/loopback", "pkg/linksafe", "pkg/check", "pkg/sandbox", "pkg/sandbox/launch"}},
		{"pkg/sandbox/vm", []string{"pkg/reasons", "pkg/linksafe", "pkg/sandbox/runinit", "pkg/check", "pkg/sandbox/seccomp", "pkg/sandbox/vm/guestimage", "pkg/sandbox", "pkg/sandbox/attack", "pkg/sandbox/launch", "pkg/sandbox/bwrap"}},
		{"pkg/endpoint", []string{"pkg/reasons", "pkg/limits", "pkg/secret", "pkg/loopback", "pkg/modelproxy/upstream", "pkg/receipt", "pkg/config", "pkg/egresswire", "pkg/modelproxy/rules", "pkg/keys", "pkg/modelproxy"}},
	}},
	{"services: what a process runs", []allowed{
		{"pkg/control", []string{"pkg/reasons", "pkg/money", "pkg/httprecord", "pkg/check", "pkg/privsep", "pkg/receipt", "pkg/config", "pkg/preflight"}},
		{"pkg/autoreply", []string{"pkg/reasons", "pkg/limits", "pkg/money", "pkg/linksafe", "pkg/check", "pkg/privsep", "pkg/receipt", "pkg/config", "pkg/egresswire", "pkg/sandbox", "pkg/store", "pkg/agents", "pkg/peer"}},
		{"pkg/dashboard", []string{"pkg/money", "pkg/termsafe", "pkg/metrics", "pkg/control"}},
		{"pkg/doctor", []string{"pkg/reasons", "pkg/limits", "pkg/helperpath", "pkg/check", "pkg/modelproxy/upstream", "pkg/privsep", "pkg/config", "pkg/sandbox", "pkg/preflight", "pkg/control"}},
		{"pkg/endpoint/service", []string{"pkg/reasons", "pkg/limits", "pkg/httprecord", "pkg/modelproxy/upstream", "pkg/privsep", "pkg/egresswire", "pkg/modelproxy/rules", "pkg/keys", "pkg/preflight", "pkg/egress", "pkg/modelproxy", "pkg/endpoint"}},
		{"pkg/endpoint/selftest", []string{"pkg/limits", "pkg/localca", "pkg/check", "pkg/modelproxy/standin", "pkg/keys", "pkg/egress", "pkg/endpoint"}},
		{"pkg/node", []string{"pkg/reasons", "pkg/limits", "pkg/money", "pkg/helperpath", "pkg/identity", "pkg/linksafe", "pkg/metrics", "pkg/check", "pkg/privsep", "pkg/receipt", "pkg/config", "pkg/egresswire", "pkg/sandbox", "pkg/store", "pkg/preflight", "pkg/peer", "pkg/sandbox/remote", "pkg/control", "pkg/dashboard", "pkg/autoreply"}},
		{"pkg/demo", []string{"pkg/money", "pkg/localca", "pkg/control"}},
	}},
	{"commands: flags wired to the packages below", []allowed{
		{"cmd/anet-sandboxd/anet-runinit", []string{"pkg/sandbox/runinit", "pkg/sandbox/attack", "pkg/sandbox/gate/inside"}},
		{"cmd/anet-sandboxd", []string{"pkg/reasons", "pkg/limits", "pkg/nodedirs", "pkg/logging", "pkg/check", "pkg/privsep", "pkg/sandbox", "pkg/sandbox/attack", "pkg/sandbox/remote", "pkg/sandbox/launch", "pkg/sandbox/bwrap", "pkg/sandbox/seatbelt", "pkg/sandbox/vm"}},
		{"cmd/anet-egress", []string{"pkg/reasons", "pkg/logging", "pkg/check", "pkg/privsep", "pkg/egresswire", "pkg/modelproxy/rules", "pkg/keys", "pkg/preflight", "pkg/endpoint", "pkg/endpoint/service", "pkg/endpoint/selftest"}},
		{"cmd/anetd", []string{"pkg/reasons", "pkg/logging", "pkg/node"}},
		{"cmd/anet", []string{"pkg/reasons", "pkg/limits", "pkg/termsafe", "pkg/helperpath", "pkg/check", "pkg/peeraddr", "pkg/privsep", "pkg/receipt", "pkg/config", "pkg/sandbox", "pkg/preflight", "pkg/agents", "pkg/control", "pkg/doctor"}},
		{"cmd/anet-demo", []string{"pkg/demo"}},
	}},
	{"tests and tooling, linked by no release binary", []allowed{
		{"internal/testkit", nil},
		{"internal/testharness", nil},
		{"internal/boundaries", nil},
		{"internal/benchcompare/gopid1", nil},
		{"internal/benchcompare", []string{"pkg/logging", "pkg/dialer", "pkg/localca", "pkg/sandbox/seccomp", "pkg/modelproxy/standin", "pkg/sandbox", "pkg/store", "pkg/keys", "pkg/egress", "pkg/modelproxy", "pkg/sandbox/launch", "pkg/sandbox/bwrap", "pkg/endpoint", "internal/testkit"}},
	}},
}

// allowed is one package and the packages of the module it may import.
type allowed struct {
	pkg     string
	imports []string
}

// TestImportsPointDown (C2) checks the graph against layers.
func TestImportsPointDown(t *testing.T) {
	pos := map[string]int{}
	may := map[string][]string{}
	for _, g := range layers {
		for _, a := range g.pkgs {
			if _, dup := pos[a.pkg]; dup {
				t.Errorf("layers list %s twice", a.pkg)
			}
			pos[a.pkg] = len(pos)
			may[a.pkg] = a.imports
		}
	}
	for p, imps := range may {
		for _, q := range imps {
			if qp, ok := pos[q]; !ok || qp >= pos[p] {
				t.Errorf("layers let %s import %s, which is not below it", p, q)
			}
		}
	}
	used := map[string]bool{}
	for _, goos := range []string{"linux", "darwin", "freebsd"} {
		for _, tags := range []string{"", "anettest"} {
			for p, imps := range moduleImports(t, goos, tags) {
				if _, ok := pos[p]; !ok {
					t.Errorf("%s (GOOS=%s tags=%q) is in no layer: add it where it belongs", p, goos, tags)
					continue
				}
				for _, q := range imps {
					used[p+" "+q] = true
					if !slices.Contains(may[p], q) {
						t.Errorf("%s imports %s (GOOS=%s tags=%q), which its layer entry does not allow", p, q, goos, tags)
					}
				}
			}
		}
	}
	for p, imps := range may {
		for _, q := range imps {
			if !used[p+" "+q] {
				t.Errorf("layers let %s import %s, which it no longer does on any platform: remove it", p, q)
			}
		}
	}
}

// moduleImports is each package of the module with the packages of the module its non-test
// files import, for one platform and set of tags, as paths below the module.
func moduleImports(t *testing.T, goos, tags string) map[string][]string {
	t.Helper()
	const mod = "anet.dev/anet/"
	args := []string{"list", "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, mod+"pkg/...", mod+"cmd/...", mod+"internal/...")...)
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s go list: %v", goos, err)
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		p, ok := strings.CutPrefix(f[0], mod)
		if !ok {
			continue
		}
		got[p] = []string{}
		for _, q := range f[1:] {
			if q, ok := strings.CutPrefix(q, mod); ok {
				got[p] = append(got[p], q)
			}
		}
	}
	if len(got) < 50 {
		t.Fatalf("GOOS=%s go list found %d packages: the check would prove nothing", goos, len(got))
	}
	return got
}
