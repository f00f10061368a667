package boundaries

import (
	"path/filepath"
	"testing"
)

// Shared test helpers live in internal/testkit, which the helpers' self-test modes link too
// (anet-egress self-test serves its fake upstream behind testkit's CA). So testkit must not
// pull the testing package into a release binary, and no release binary may link it.
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
