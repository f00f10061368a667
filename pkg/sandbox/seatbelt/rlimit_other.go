//go:build unix && !darwin && !linux

package seatbelt

import "anet.dev/anet/pkg/check"

// rlimits cannot be read here: the backend runs on macOS, and its tests on Linux.
func rlimits(RunLimits) check.Check {
	return fail(ItemRlimits, "S6,M1", "resource limits are not checked on this platform")
}
