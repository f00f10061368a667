//go:build linux && anettest

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestFiltersWeakened(t *testing.T) {
	info, native := nativeInfo(t)
	vsock := seccompData{nr: nr(t, info, "socket"), arch: native, args: [6]uint64{40, unix.SOCK_STREAM}}
	keyctl := seccompData{nr: nr(t, info, "keyctl"), arch: native}
	i386 := seccompData{nr: 288, arch: unix.AUDIT_ARCH_I386}
	cases := []struct {
		name                   string
		omit                   []string
		progs                  int
		vsockV, keyctlV, i386V string
	}{
		{"none", nil, 2, errnoVerdict(unix.EAFNOSUPPORT), errnoVerdict(unix.EPERM), kill},
		{"socket", []string{"socket"}, 2, allow, errnoVerdict(unix.EPERM), kill},
		{"keyctl", []string{"keyctl"}, 2, errnoVerdict(unix.EAFNOSUPPORT), allow, kill},
		{"arch", []string{RuleArch}, 1, errnoVerdict(unix.EAFNOSUPPORT), errnoVerdict(unix.EPERM), allow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			progs, err := FiltersWeakened(c.omit)
			if err != nil {
				t.Fatalf("FiltersWeakened(%v): %v", c.omit, err)
			}
			if len(progs) != c.progs {
				t.Fatalf("FiltersWeakened(%v) = %d programs, want %d", c.omit, len(progs), c.progs)
			}
			for _, x := range []struct {
				d    seccompData
				want string
			}{{vsock, c.vsockV}, {keyctl, c.keyctlV}, {i386, c.i386V}} {
				if got := describe(verdict(t, progs, x.d)); got != x.want {
					t.Errorf("verdict(%v) = %s, want %s", x.d, got, x.want)
				}
			}
		})
	}
	if _, err := FiltersWeakened([]string{"no_such_rule"}); err == nil {
		t.Errorf("FiltersWeakened([no_such_rule]) = nil error, want a refusal")
	}
}
