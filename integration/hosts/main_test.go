//go:build anettest && linux

// Package hosts is the hosts rig (Linux only: it boots a Linux guest under QEMU): the node's
// release .deb installed, and its real systemd units running, on the host operators run (C4):
// a stock Debian 12 with systemd as pid 1, the unified cgroup v2 hierarchy and a lingering user
// whose user manager runs, and a Debian 13 with AppArmor on, each booted under QEMU from an
// image built of Debian's own packages (scripts/hosts-image.sh, by scripts/deps.sh as root).
// One boot of each guest runs every scenario of its directory (README.md beside this file).
package hosts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"anet.dev/anet/internal/testharness"
)

// imageDir is where scripts/deps.sh builds the guests (hosts_dir there).
const imageDir = "/var/cache/anet/hosts"

// suite is one guest the rig boots: an image scripts/hosts-image.sh builds, and the scenarios
// that run in it.
type suite struct {
	name string // the Debian suite, and the image's files: NAME.img, NAME.vmlinuz, NAME.initrd
	what string // what it is, for the log
	// dir holds its scenarios (DIR/*.sh). Names are unique across suites, so that
	// SCENARIO=NAME picks one guest.
	dir string
	// cmdline is added to the guest kernel's command line.
	cmdline string
}

// suites are the guests, booted one after the other: Debian 12 for most scenarios; Debian 13,
// whose parser is AppArmor 4's and whose kernel is booted with AppArmor on, for the AppArmor
// profile (A1–A3); Ubuntu 24.04, whose kernel restricts unprivileged user namespaces, for the
// host that needs the profile (L2).
var suites = []suite{
	{name: "bookworm", what: "Debian 12", dir: "scenarios"},
	{name: "trixie", what: "Debian 13 with AppArmor", dir: "scenarios-apparmor", cmdline: "apparmor=1 security=apparmor"},
	{name: "noble", what: "Ubuntu 24.04", dir: "scenarios-ubuntu"},
}

// files are the suite's image, kernel and initrd in imageDir.
func (s suite) files() (img, kernel, initrd string) {
	p := filepath.Join(imageDir, s.name)
	return p + ".img", p + ".vmlinuz", p + ".initrd"
}

// The packages Prepare builds: the release .deb of this tree, and the same tree at a higher
// version for the upgrade scenario.
const (
	toolsDir      = "tools" // programs for the guest, in the prepared dir and the share
	benchName     = "benchcompare"
	goPid1Name    = "gopid1"
	standinName   = "standin" // the stand-in api.anthropic.com (./standin)
	claudeName    = "claude"  // the pinned claude CLI, copied from the test agents' prefix
	nodeName      = "node"    // the agents' Node, for sandbox-runtime in the launch bench
	srtTar        = "srt.tar" // sandbox-runtime at the Makefile's pin, npm-installed here
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

// missingImage says what of the images is missing, or "".
func missingImage() string {
	for _, s := range suites {
		img, kernel, initrd := s.files()
		for _, f := range []string{img, kernel, initrd} {
			if _, err := os.Stat(f); err != nil {
				return "the " + s.what + " guest image is missing: " + err.Error()
			}
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
	// The launch bench (make bench-compare's launch section) and its empty Go pid 1, and the
	// stand-in model service, static, for the guest, which has no Go toolchain.
	for _, b := range []struct{ out, pkg, tags string }{
		{benchName, "./internal/benchcompare", "anettest"},
		{goPid1Name, "./internal/benchcompare/gopid1", ""},
		{standinName, "./integration/hosts/standin", ""},
	} {
		args := []string{"-C", root, "build", "-trimpath", "-o", filepath.Join(dir, toolsDir, b.out)}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	if err := installSRT(root, filepath.Join(dir, toolsDir)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, versionFile), []byte(v+"\n"), 0o644)
}

// srtPin is the Makefile's SRT_VERSION: the sandbox-runtime make bench-compare measures.
var srtPin = regexp.MustCompile(`(?m)^SRT_VERSION\s*:=\s*(\S+)$`)

// installSRT npm-installs sandbox-runtime at the Makefile's pin into a tree and packs it as
// tools/srt.tar, for the launch bench in the guest (which has no npm and no network).
func installSRT(root, tools string) error {
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return err
	}
	m := srtPin.FindSubmatch(mk)
	if m == nil {
		return fmt.Errorf("the Makefile names no SRT_VERSION")
	}
	tree := filepath.Join(tools, "srt")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return err
	}
	pj := fmt.Sprintf(`{"private":true,"dependencies":{"@anthropic-ai/sandbox-runtime":%q}}`, string(m[1]))
	if err := os.WriteFile(filepath.Join(tree, "package.json"), []byte(pj), 0o644); err != nil {
		return err
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tree
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm install @anthropic-ai/sandbox-runtime@%s (the launch bench's anchor): %v\n%s", m[1], err, out)
	}
	if out, err := exec.Command("tar", "-C", tree, "-cf", filepath.Join(tools, srtTar), ".").CombinedOutput(); err != nil {
		return fmt.Errorf("tar sandbox-runtime: %v\n%s", err, out)
	}
	return os.RemoveAll(tree)
}

// debName is the file name the Makefile gives the .deb of version v.
func debName(v string) string { return "anet_" + v + "-1_amd64.deb" }
