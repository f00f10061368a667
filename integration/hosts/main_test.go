//go:build anettest && linux

// Package hosts is the hosts rig (Linux only: it boots a Linux guest under QEMU): the node's
// release .deb installed, and its real systemd units running, on the host operators run (C4):
// a stock Debian 12 with systemd as pid 1, the unified cgroup v2 hierarchy and a lingering user
// whose user manager runs, booted under QEMU from an image built of Debian's own packages
// (scripts/hosts-image.sh, by scripts/deps.sh as root). One guest boots for every scenario of
// scenarios/ (README.md beside this file).
package hosts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/internal/testharness"
)

// imageDir is where scripts/deps.sh builds the guest (hosts_dir there).
const imageDir = "/var/cache/anet/hosts"

// The guest's files in imageDir.
var imageFiles = []string{"bookworm.img", "vmlinuz", "initrd.img"}

// The packages Prepare builds: the release .deb of this tree, and the same tree at a higher
// version for the upgrade scenario.
const (
	debDir        = "debs"
	versionFile   = "version"
	upgradeSuffix = "+rig1"
)

func TestMain(m *testing.M) {
	// The image is the deps phase's (root, debootstrap): without it nothing here can run,
	// and that is a failure, not a skip.
	if miss := missingImage(); miss != "" {
		fmt.Fprintf(os.Stderr, "hosts rig: %s\nbuild it (as root, once): bash scripts/deps.sh ensure test   (or: ensure hosts, the rig alone)\n", miss)
		os.Exit(1)
	}
	// The test user boots the guest on /dev/kvm where it may: the harness, not the product,
	// gives it the kvm group.
	testharness.Main(m, testharness.Options{Groups: []string{"kvm"}, Prepare: buildPackages})
}

// missingImage says what of the image is missing or stale, or "".
func missingImage() string {
	for _, f := range imageFiles {
		if _, err := os.Stat(filepath.Join(imageDir, f)); err != nil {
			return "the guest image is missing: " + err.Error()
		}
	}
	return ""
}

// buildPackages builds the two .deb files with the Makefile's own package-deb target, as the
// invoking user (whose module cache holds nfpm), into dir/debs.
func buildPackages(dir string) error {
	root := testharness.ModuleRoot()
	if root == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return fmt.Errorf("go env GOMOD: %w", err)
		}
		root = filepath.Dir(strings.TrimSpace(string(out)))
	}
	ver, err := exec.Command("go", "-C", root, "run", "./packaging/pkgmeta", "version").Output()
	if err != nil {
		return fmt.Errorf("pkgmeta version: %w", err)
	}
	v := strings.TrimSpace(string(ver))
	debs := filepath.Join(dir, debDir)
	for _, pv := range []string{v, v + upgradeSuffix} {
		dist := filepath.Join(dir, "dist-"+pv)
		cmd := exec.Command("make", "-C", root, "--no-print-directory", "package-deb", "DIST="+dist, "PKGVERSION="+pv)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("make package-deb PKGVERSION=%s: %v\n%s", pv, err, out)
		}
		if err := os.MkdirAll(debs, 0o755); err != nil {
			return err
		}
		name := debName(pv)
		if err := os.Rename(filepath.Join(dist, name), filepath.Join(debs, name)); err != nil {
			return fmt.Errorf("the package make built: %w", err)
		}
		if err := os.RemoveAll(dist); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, versionFile), []byte(v+"\n"), 0o644)
}

// debName is the file name the Makefile gives the .deb of version v.
func debName(v string) string { return "anet_" + v + "-1_amd64.deb" }
