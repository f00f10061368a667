//go:build !linux

package attack

import (
	"fmt"
	"io"
	"runtime"

	"anet.dev/anet/pkg/check"
)

// battery is empty off Linux: the Linux sandbox is the only one this battery attacks.
var battery []entry

// ChildMain is unsupported off Linux.
func ChildMain(name string, stdout io.Writer) int {
	fmt.Fprintf(stdout, "attack children are not supported on %s\n", runtime.GOOS)
	return 2
}

// ProbeChecks is unsupported off Linux: every check fails and says so.
func ProbeChecks(ProbeTargets) []check.Check {
	var out []check.Check
	for _, n := range ProbeCheckNames(ProbeTargets{}) {
		out = append(out, probeFailed(n, "the in-sandbox checks are not supported on "+runtime.GOOS))
	}
	return out
}
