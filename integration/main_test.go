// Package integration holds end-to-end tests: the real binaries, started as an unprivileged
// user (created by the harness when the tests run as root), with a temporary XDG tree each.
package integration

import (
	"testing"

	"anet.dev/anet/internal/testharness"
)

func TestMain(m *testing.M) {
	testharness.Main(m, testharness.Options{Builds: testharness.Binaries, Cgroup: true})
}
