//go:build !linux

package attack

import (
	"fmt"
	"io"
	"runtime"
)

// battery is empty off Linux: the Linux sandbox is the only one this battery attacks.
var battery []entry

// ChildMain is unsupported off Linux.
func ChildMain(name string, stdout io.Writer) int {
	fmt.Fprintf(stdout, "attack children are not supported on %s\n", runtime.GOOS)
	return 2
}
