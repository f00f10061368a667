package node

import (
	"testing"

	"anet.dev/anet/internal/testharness"
)

func TestMain(m *testing.M) {
	testharness.Main(m, testharness.Options{Builds: []testharness.Build{
		{Name: "anet-sandboxd", Pkg: "./cmd/anet-sandboxd"},
		// A test build, whose sandbox ANET_UNSAFE_TEST_WEAKEN can open a hole in: the proof of
		// the wall must find it.
		{Name: "anet-sandboxd-weak", Pkg: "./cmd/anet-sandboxd", Tags: []string{"anettest"}},
		{Name: "anet-egress", Pkg: "./cmd/anet-egress"},
		testharness.RunInit,
	}, Cgroup: true})
}
