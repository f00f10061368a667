//go:build unix && !darwin && !linux

package seatbelt

import (
	"errors"
	"os"
	"regexp"
)

func openDecoyTTY() (*os.File, string, error) {
	return nil, "", errors.New("decoy terminal: not made on this platform")
}

var ttyPattern = regexp.MustCompile(`^$`)

const ttyGlob = ""
