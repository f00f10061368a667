//go:build darwin || linux

package seatbelt

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/check"
)

// rlimits: the run has the resource limits the launcher set, soft and hard (S6).
func rlimits(want RunLimits) check.Check {
	var bad []string
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{{"RLIMIT_CORE", unix.RLIMIT_CORE, 0}, {"RLIMIT_CPU", unix.RLIMIT_CPU, want.CPU}, {"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, want.FileSize},
		{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, want.OpenFiles}, {"RLIMIT_NPROC", unix.RLIMIT_NPROC, want.Procs}} {
		if r.v == 0 && r.name != "RLIMIT_CORE" {
			continue
		}
		var got unix.Rlimit
		if err := unix.Getrlimit(r.res, &got); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", r.name, err))
		} else if uint64(got.Cur) != r.v || uint64(got.Max) != r.v {
			bad = append(bad, fmt.Sprintf("%s %d/%d, want %d", r.name, got.Cur, got.Max, r.v))
		}
	}
	if len(bad) > 0 {
		return fail(ItemRlimits, "S6,M1", strings.Join(bad, "; "))
	}
	return pass(ItemRlimits, "S6,M1", "core 0, cpu, file size, open files and processes as set")
}
