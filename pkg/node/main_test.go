package node

import (
	"testing"

	"anet.dev/anet/internal/testharness"
)

func TestMain(m *testing.M) {
	testharness.Main(m, testharness.Options{Builds: []testharness.Build{{Name: "anet-sandboxd", Pkg: "./cmd/anet-sandboxd"}, testharness.RunInit}, Cgroup: true})
}
