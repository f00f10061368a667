//go:build !darwin

package doctor

import "anet.dev/anet/pkg/check"

// HostChecks runs the checks that need no sandbox: here, bubblewrap's (L1, L2).
func (h Host) HostChecks() []check.Check { return h.bwrapChecks() }
