// Package testharness runs a test binary as an unprivileged user with real, delegated
// resources, so that tests exercise the node the way it runs in production: unprivileged.
//
// CI runs as root. A test package that checks the daemon or the sandbox calls Main from its
// TestMain. As root, Main does the root-only set-up that the product must never assume (a
// user, a delegated cgroup subtree), builds the binaries the tests need, and re-executes the
// test binary as that user. As an ordinary user it builds the binaries and runs the tests
// directly. The product itself never runs anything here as root.
//
// A fuzzing run (go test -fuzz, and the workers it starts) stays the invoking user: the go
// command's fuzz cache lives in that user's home, and a crasher must be written to the
// package's own testdata/fuzz, not to the copy the unprivileged side runs in. Fuzz targets
// parse bytes and need neither the user nor the cgroup.
package testharness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// User is the unprivileged account the harness creates when it runs as root.
const User = "anettest"

// Environment variables through which the root side tells the unprivileged side what it set up.
const (
	envChild     = "ANET_TEST_UNPRIV"
	envBinDir    = "ANET_TEST_BIN_DIR"
	envCgMemory  = "ANET_TEST_CGROUP_MEMORY"
	envCgPids    = "ANET_TEST_CGROUP_PIDS"
	envCgV2      = "ANET_TEST_CGROUP_V2"
	envCgV2Why   = "ANET_TEST_CGROUP_V2_WHY"
	envModRoot   = "ANET_TEST_MODULE_ROOT"
	envPkgSource = "ANET_TEST_PKG_DIR"
	envPrepared  = "ANET_TEST_PREPARED_DIR"
)

// Build names one program to build before the tests run.
type Build struct {
	// Name is the output file name in BinDir.
	Name string
	// Pkg is the package path relative to the module root, e.g. "./cmd/anetd".
	Pkg string
	// Tags are extra build tags (e.g. "anettest" for test-only hooks).
	Tags []string
	// Static builds without cgo, as the Makefile builds the run init.
	Static bool
}

// RunInit is anet-runinit, which anet-sandboxd finds beside itself: every test that builds
// anet-sandboxd to start sandboxed runs builds it too.
var RunInit = Build{Name: "anet-runinit", Pkg: "./cmd/anet-sandboxd/anet-runinit", Static: true}

// Options says what a test package needs.
type Options struct {
	// Builds are compiled (as the invoking user, so root's module cache is used) into BinDir.
	Builds []Build
	// Cgroup asks, when running as root, for a cgroup v1 memory+pids subtree delegated to the
	// test user by ownership, with the test process moved into it.
	Cgroup bool
	// CgroupV2 asks, when running as root, for a cgroup v2 dir delegated to the test user by
	// ownership, with the test process moved into it (CgroupV2Dir).
	CgroupV2 bool
	// Groups are supplementary groups, by name, that the tests run with when root drops to
	// the test user (kvm, for a test that boots a guest on /dev/kvm). A group this host does
	// not have is left out: the test then sees the device as any user would.
	Groups []string
	// Prepare, when set, runs once on the invoking side after Builds, before any drop to the
	// test user, with an empty directory the tests then find as PreparedDir: for artefacts
	// whose build needs the invoking user's caches (the distribution packages, whose nfpm
	// comes through the Go module proxy).
	Prepare func(dir string) error
}

// Binaries is the usual set: the four release binaries and the run init.
var Binaries = []Build{
	{Name: "anetd", Pkg: "./cmd/anetd"},
	{Name: "anet", Pkg: "./cmd/anet"},
	{Name: "anet-sandboxd", Pkg: "./cmd/anet-sandboxd"},
	{Name: "anet-egress", Pkg: "./cmd/anet-egress"},
	RunInit,
}

// Main runs the tests as described in the package comment and exits.
func Main(m *testing.M, o Options) {
	os.Exit(run(m, o))
}

func run(m *testing.M, o Options) int {
	if os.Getenv(envChild) == "1" {
		if err := childSetup(o); err != nil {
			fmt.Fprintf(os.Stderr, "testharness (unprivileged side): %v\n", err)
			return 2
		}
		return m.Run()
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testharness: %v\n", err)
		return 2
	}
	work, err := os.MkdirTemp("", "anet-harness-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "testharness: %v\n", err)
		return 2
	}
	defer os.RemoveAll(work)
	binDir := filepath.Join(work, "bin")
	builds := o.Builds
	if fuzzing(os.Args[1:]) {
		// A fuzz run (scripts/fuzz.sh: -run '^$' -fuzz X) runs one target, in the coordinator
		// and in each worker process; none of the targets starts a built program, so none is
		// built (Bin fails loudly if one ever asks).
		builds = nil
	}
	if err := buildAll(root, binDir, builds); err != nil {
		fmt.Fprintf(os.Stderr, "testharness: %v\n", err)
		return 2
	}
	if o.Prepare != nil {
		dir := filepath.Join(work, "prepared")
		if err := os.Mkdir(dir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "testharness: %v\n", err)
			return 2
		}
		if err := o.Prepare(dir); err != nil {
			fmt.Fprintf(os.Stderr, "testharness: prepare: %v\n", err)
			return 2
		}
		os.Setenv(envPrepared, dir)
	}
	if os.Geteuid() != 0 || fuzzing(os.Args[1:]) {
		os.Setenv(envBinDir, binDir)
		os.Setenv(envModRoot, root)
		return m.Run()
	}
	code, err := runAsUser(work, binDir, root, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testharness: %v\n", err)
		return 2
	}
	return code
}

// fuzzing reports a test binary started by go test -fuzz: the coordinator or a worker.
func fuzzing(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-test.fuzz=") || strings.HasPrefix(a, "-test.fuzzworker") {
			return true
		}
	}
	return false
}

// BinDir is where the requested programs were built.
func BinDir() string { return os.Getenv(envBinDir) }

// Bin returns the path of a built program, failing the test if it was not built.
func Bin(t testing.TB, name string) string {
	t.Helper()
	dir := BinDir()
	if dir == "" {
		t.Fatalf("testharness: no binaries were built; call testharness.Main from TestMain with Builds")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testharness: %s was not built: %v", name, err)
	}
	return p
}

// PreparedDir is the directory Options.Prepare filled; "" when there was no Prepare.
func PreparedDir() string { return os.Getenv(envPrepared) }

// ModuleRoot is the source tree's root (read-only for the tests).
func ModuleRoot() string { return os.Getenv(envModRoot) }

// CgroupDelegated reports whether the harness delegated a cgroup v1 memory+pids subtree to this
// process (as root set-up). Tests of the cgroupfs limits path require it and fail loudly
// without it.
func CgroupDelegated() bool { return os.Getenv(envCgMemory) != "" && os.Getenv(envCgPids) != "" }

// CgroupV2Dir is the cgroup v2 dir the harness delegated to this process (Options.CgroupV2),
// which it is in. A test that needs one fails loudly without it, like the cgroup v1 tests
// (CgroupDelegated): a skip would hide a harness that could not delegate one on CI.
func CgroupV2Dir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(envCgV2); dir != "" {
		return dir
	}
	why := os.Getenv(envCgV2Why)
	if why == "" {
		why = "the tests did not run as root, so the harness delegated none (run them as root: the harness drops to its test user)"
	}
	t.Fatalf("no cgroup v2 dir delegated to the test user: %s", why)
	return ""
}

// Unprivileged reports whether the tests run as a non-root user.
func Unprivileged() bool { return os.Geteuid() != 0 }

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the module (go env GOMOD = %q)", mod)
	}
	return filepath.Dir(mod), nil
}

func buildAll(root, binDir string, builds []Build) error {
	if len(builds) == 0 {
		return nil
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	for _, b := range builds {
		args := []string{"build", "-o", filepath.Join(binDir, b.Name)}
		if len(b.Tags) > 0 {
			args = append(args, "-tags", strings.Join(b.Tags, ","))
		}
		args = append(args, b.Pkg)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if b.Static {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}
