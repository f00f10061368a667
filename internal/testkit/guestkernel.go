package testkit

import "path/filepath"

// GuestKernelDir is where the vm tier's tests find Debian's plain kernel package: make
// test-deps (scripts/deps.sh) downloads it there, and apt, which cleans its own archive dir,
// never removes it.
const GuestKernelDir = "/var/cache/anet"

// NeedGuestKernelPackage fails (never skips) with the command that downloads the package when
// GuestKernelDir holds no linux-image-*-amd64 one.
func NeedGuestKernelPackage(t T) {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(GuestKernelDir, "linux-image-*-amd64_*.deb")); len(m) == 0 {
		t.Fatalf("no guest kernel package; run: mkdir -p /var/cache/anet && cd /var/cache/anet && apt-get download $(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image/{print $2}')")
	}
}
