//go:build linux && anettest

package attack

import (
	"strings"
	"testing"

	"anet.dev/anet/pkg/sandbox/seccomp"
)

func childFilters(spec string) ([][]byte, error) {
	if spec == "all" {
		return seccomp.Filters(seccomp.Options{})
	}
	return seccomp.FiltersWeakened(strings.Split(strings.TrimPrefix(spec, "omit:"), ","))
}

// TestWeakenedFiltersDetected removes one rule at a time (a build only tests can make) and
// checks that the attack guarding it now reports a hole: the battery, and so
// `anet-sandboxd self-test`, fails when a protection is turned off (S4).
func TestWeakenedFiltersDetected(t *testing.T) {
	for _, c := range []struct {
		omit, attack string
	}{
		{seccomp.RuleArch, "int80"},
		{"socket", "af_vsock"},
		{"keyctl", "keyctl"},
		{"ioctl", "tiocsti_highbits"},
		{"clone", "clone_newuser"},
		{"clone3", "clone3"},
		{"io_uring_setup", "io_uring_setup"},
	} {
		t.Run(c.omit, func(t *testing.T) {
			r := runFiltered(t, "omit:"+c.omit, []string{c.attack})[c.attack]
			if r.Blocked {
				t.Errorf("Run(%s) without rule %s = blocked (%s: %s), want a reported hole", c.attack, c.omit, r.How, r.Detail)
			}
		})
	}
}
