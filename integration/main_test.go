// Package integration holds end-to-end tests: the real binaries, started as an unprivileged
// user (created by the harness when the tests run as root), with a temporary XDG tree each.
package integration

import (
	"testing"

	"anet.dev/anet/internal/testharness"
)

func TestMain(m *testing.M) {
	builds := append([]testharness.Build{}, testharness.Binaries...)
	// The real-client tests point api.anthropic.com / api.openai.com at a loopback fake; only a
	// test build (-tags anettest) of anet-egress has that redirect hook.
	builds = append(builds, testharness.Build{Name: "anet-egress-test", Pkg: "./cmd/anet-egress", Tags: []string{"anettest"}})
	builds = append(builds, autoreplyBuilds...) // auto-reply tests: autoreply_helpers_test.go
	testharness.Main(m, testharness.Options{Builds: builds, Cgroup: true})
}
