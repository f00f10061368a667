package boundaries

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Shared test helpers live in internal/testkit; what a release binary needs of them (the
// throw-away CA of anet-egress's self-test and anet-demo) lives in pkg/localca. testkit must
// still not pull the testing package into anything that links it, and no release binary may
// link the testing package.
func TestReleaseBinariesLinkNoTestingPackage(t *testing.T) {
	for _, pkg := range []string{"anet.dev/anet/internal/testkit", "anet.dev/anet/cmd/anetd", "anet.dev/anet/cmd/anet",
		"anet.dev/anet/cmd/anet-sandboxd", "anet.dev/anet/cmd/anet-egress"} {
		t.Run(filepath.Base(pkg), func(t *testing.T) {
			d := deps(t, pkg)
			if !d["fmt"] && !d["time"] {
				t.Fatalf("go list -deps %s gave %d packages: the check would prove nothing", pkg, len(d))
			}
			if d["testing"] {
				t.Errorf("%s links the testing package", pkg)
			}
		})
	}
}

// isTestPackage is the rule for what a release binary must not link: a package with a path
// element named testkit or testharness, or ending in "test" (modelproxytest, httptest). Two
// exceptions: an element "selftest" is the helpers' self-test mode, a product feature (C4),
// not test code; and the standard library's own internal packages (internal/synctest,
// internal/testlog) are linked by every Go binary through sync, time and os.
func isTestPackage(path string) bool {
	elems := strings.Split(path, "/")
	std := !strings.Contains(elems[0], ".")
	if std && (elems[0] == "internal" || strings.Contains(path, "/internal/")) {
		return false
	}
	for _, e := range elems {
		if e == "testkit" || e == "testharness" || (strings.HasSuffix(e, "test") && e != "selftest") {
			return true
		}
	}
	return false
}

func TestIsTestPackage(t *testing.T) {
	for path, want := range map[string]bool{
		"anet.dev/anet/internal/testkit":               true,
		"anet.dev/anet/internal/testharness":           true,
		"anet.dev/anet/pkg/modelproxy/modelproxytest":  true,
		"anet.dev/anet/pkg/endpoint/selftest":          false,
		"anet.dev/anet/pkg/localca":                    false,
		"anet.dev/anet/pkg/modelproxy/standin":         false,
		"anet.dev/anet/pkg/sandbox/attack":             false,
		"net/http/httptest":                            true,
		"internal/synctest":                            false,
		"net/http/internal/testcert":                   false,
		"testing":                                      false,
		"github.com/example/lib/libtest":               true,
		"github.com/example/internal/fakes/faketest":   true,
		"anet.dev/anet/pkg/autoreply/shape_latest_doc": false,
	} {
		if got := isTestPackage(path); got != want {
			t.Errorf("isTestPackage(%q) = %v, want %v", path, got, want)
		}
	}
}

// Release binaries link nothing that exists for tests: no test helper, no stand-in that is
// only a test's, no test harness (the rule: isTestPackage). Every command under cmd/ is
// checked as released (without the anettest tag), for Linux and for macOS, whose backends
// link different packages.
func TestReleaseBinariesLinkNoTestPackages(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-e", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{range .Deps}} {{.}}{{end}}{{"\n"}}{{end}}`, "anet.dev/anet/cmd/...")
			cmd.Env = append(os.Environ(), "GOOS="+goos)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("GOOS=%s go list cmd/...: %v", goos, err)
			}
			bins := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Fields(line)
				if len(f) < 10 {
					t.Fatalf("go list gave %q: the check would prove nothing", line)
				}
				bins[filepath.Base(f[0])] = true
				for _, d := range f[1:] {
					if isTestPackage(d) {
						t.Errorf("%s links %s, a test package (GOOS=%s)", f[0], d, goos)
					}
				}
			}
			for _, b := range []string{"anetd", "anet", "anet-sandboxd", "anet-egress", "anet-demo"} {
				if !bins[b] {
					t.Errorf("go list cmd/... (GOOS=%s) lacks %s: the check would miss it", goos, b)
				}
			}
		})
	}
}
