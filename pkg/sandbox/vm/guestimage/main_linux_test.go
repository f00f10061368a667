package guestimage_test

import (
	"os"
	"path/filepath"
	"testing"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
)

// The initramfs tests pack a real guest init, anet-sandboxd; the harness builds it and runs
// the tests as the unprivileged user, as the node runs.
func TestMain(m *testing.M) {
	testharness.Main(m, testharness.Options{Builds: []testharness.Build{{Name: "anet-sandboxd", Pkg: "./cmd/anet-sandboxd"}}})
}

// kernelCache is where these tests extract the guest kernel: under the user's cache, so it is
// extracted once per machine, but not the vm backend's own dir, which that package's tests
// (another process, perhaps at the same time) extract into.
func kernelCache(t *testing.T) string {
	t.Helper()
	testkit.NeedGuestKernelPackage(t)
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(cache, "anet", "guestimage-test")
}
