//go:build unix && !darwin

package seatbelt

import (
	"context"
	"fmt"
	"os"
)

// sandboxCheck: elsewhere nothing answers sandbox_check(3): every operation is allowed, as on a Mac with no
// sandbox, so the items that rest on it fail here (the Linux tests run them so).
func sandboxCheck(Ask) (bool, error) { return false, nil }

// procPath reads another process's program, as proc_pidpath(3) does on macOS.
func procPath(pid int) (string, error) {
	p, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", fmt.Errorf("read process %d: %w", pid, err)
	}
	return p, nil
}

// systemLookup is nil: the Go resolver the dns item drives is this platform's own resolver.
var systemLookup func(ctx context.Context, name string) ([]string, error)
