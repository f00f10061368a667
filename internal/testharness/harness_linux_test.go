package testharness

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	Main(m, Options{Cgroup: true, Builds: []Build{{Name: "anet-harness-probe", Pkg: "./internal/testharness/testdata/probe"}}})
}

// The harness is what makes every sandbox and daemon test honest about privileges: if it
// silently ran the tests as root, they would prove nothing about the unprivileged daemon.
func TestRunsUnprivilegedInDelegatedCgroup(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatalf("tests run as root; the harness must drop to %s", User)
	}
	if !CgroupDelegated() {
		t.Fatalf("no delegated cgroup")
	}
	if !inCgroup(os.Getenv(envCgMemory)) {
		t.Fatalf("not in the delegated memory cgroup %s", os.Getenv(envCgMemory))
	}
	if _, err := os.Stat(Bin(t, "anet-harness-probe")); err != nil {
		t.Fatal(err)
	}
}
