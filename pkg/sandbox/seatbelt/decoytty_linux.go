package seatbelt

import (
	"fmt"
	"os"
	"regexp"
	"syscall"

	"golang.org/x/sys/unix"
)

// openDecoyTTY opens a pseudo-terminal whose slave the run did not open (on Linux for the
// tests, which run the items with nothing around them).
func openDecoyTTY() (*os.File, string, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, "", fmt.Errorf("decoy terminal: %w", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, "", fmt.Errorf("decoy terminal: unlock: %w", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, "", fmt.Errorf("decoy terminal: number: %w", err)
	}
	return m, fmt.Sprintf("/dev/pts/%d", n), nil
}

var ttyPattern = regexp.MustCompile(`^/dev/pts/[0-9]+$`)

const ttyGlob = "/dev/pts/*"
