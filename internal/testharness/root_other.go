//go:build !linux

package testharness

import (
	"errors"
	"runtime"
)

// errNotLinux: the root-side set-up (a test user, a delegated cgroup v1 subtree) exists only
// on Linux, which is where CI runs the tests that need it.
var errNotLinux = errors.New("the test harness's root set-up needs Linux (this is " + runtime.GOOS + "); run the tests as an ordinary user")

func runAsUser(work, binDir, modRoot string, o Options) (int, error) { return 2, errNotLinux }

func childSetup(o Options) error { return errNotLinux }
