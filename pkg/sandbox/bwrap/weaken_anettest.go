//go:build anettest && linux

package bwrap

import (
	"os"
	"strings"

	"anet.dev/anet/pkg/sandbox/seccomp"
)

// UnsafeWeakenEnv names protections to drop, comma-separated: "net" (no --unshare-net),
// "seccomp" (no filters), "userns" (no --disable-userns), "omit:NAME" (build the filters
// without rule NAME, see seccomp.FiltersWeakened). It exists only in test builds (-tags
// anettest), to prove that self-test notices a hole; release builds ignore the variable.
const UnsafeWeakenEnv = "ANET_UNSAFE_TEST_WEAKEN"

func testWeakening() Weakening {
	var w Weakening
	for _, f := range strings.Split(os.Getenv(UnsafeWeakenEnv), ",") {
		switch f {
		case "net":
			w.KeepNet = true
		case "seccomp":
			w.NoSeccomp = true
		case "userns":
			w.AllowUserns = true
		}
	}
	return w
}

func testFilters() func() ([][]byte, error) {
	var omit []string
	for _, f := range strings.Split(os.Getenv(UnsafeWeakenEnv), ",") {
		if name, ok := strings.CutPrefix(f, "omit:"); ok {
			omit = append(omit, name)
		}
	}
	if len(omit) == 0 {
		return nil
	}
	return func() ([][]byte, error) { return seccomp.FiltersWeakened(omit) }
}
