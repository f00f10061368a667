package vm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
	"anet.dev/anet/pkg/sandbox/vm"
)

// These tests boot real guests under QEMU's software emulation (TCG): each boot costs a few
// seconds of CPU, so the tests share launchers (and their probe) and keep boots few.

func TestMain(m *testing.M) {
	testharness.Main(m, testharness.Options{
		Builds: []testharness.Build{{Name: "anet-sandboxd", Pkg: "./cmd/anet-sandboxd"}, testharness.RunInit},
		Cgroup: true,
	})
}

// vmHost is a test's view of the operator's machine: anet-sandboxd's Launcher with the vm
// backend, as `--isolation vm --vm-allow-tcg` builds it.
type vmHost struct {
	self    string
	l       *launch.Launcher
	runRoot string
	cache   string
}

var (
	sharedOnce sync.Once
	shared     *vmHost
	sharedErr  string
)

// needHost fails (never skips) with the command that fixes a missing prerequisite.
func needHost(t *testing.T) { needHostB(t) }

func needHostB(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Fatalf("QEMU is not installed; run: apt-get install -y qemu-system-x86 (%v)", err)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bwrap is not installed; run: apt-get install -y bubblewrap (%v)", err)
	}
	testkit.NeedGuestKernelPackage(t)
	if !testharness.CgroupDelegated() {
		t.Fatalf("no delegated cgroup: run the tests as root (CI) so the harness delegates one")
	}
}

// sharedHost is one launcher for the package: its probe boots one guest, and later runs reuse
// the prepared kernel and initramfs. The cache dir outlives the test binary (the user's
// cache), so the kernel is extracted once per machine.
func sharedHost(t *testing.T) *vmHost { return sharedHostB(t) }

func sharedHostB(t testing.TB) *vmHost {
	t.Helper()
	needHostB(t)
	sharedOnce.Do(func() {
		h, err := newVMHost(vm.Name)
		if err != nil {
			sharedErr = err.Error()
			return
		}
		shared = h
	})
	if shared == nil {
		t.Fatalf("vm launcher: %s", sharedErr)
	}
	return shared
}

// newVMHost builds the Launcher with backend (vm.Name, or one a test registers) and the
// options serve would give it.
func newVMHost(backend string) (*vmHost, error) {
	base, err := os.MkdirTemp("", "anet-vm-test-")
	if err != nil {
		return nil, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	h := &vmHost{self: filepath.Join(testharness.BinDir(), "anet-sandboxd"), runRoot: filepath.Join(base, "runs"), cache: filepath.Join(cache, "anet", "vm")}
	h.l, err = launch.New(launch.Options{Backend: backend, Self: h.self, CacheDir: h.cache, AllowEmulation: true})
	if err != nil {
		return nil, err
	}
	return h, nil
}

type runResult struct {
	out     sandbox.Outcome
	stdout  string
	stderr  string
	elapsed time.Duration
}

func (h *vmHost) run(t *testing.T, spec sandbox.Spec) runResult {
	t.Helper()
	if spec.ID == "" {
		spec.ID = "t" + time.Now().Format("150405.000000")
	}
	spec.Mode = sandbox.ModeSandbox
	if spec.RunRoot == "" {
		spec.RunRoot = h.runRoot
	}
	var so, se bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	r, err := h.l.Start(ctx, spec, sandbox.Stdio{Stdout: &so, Stderr: &se})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	o := r.Wait()
	elapsed := time.Since(start)
	// S3: once settled, neither the vm dir nor the dirs of QEMU's wall are left.
	select {
	case <-r.(launch.Settler).Settled():
	case <-time.After(time.Minute):
		t.Fatalf("the vm run was not settled within a minute of its outcome")
	}
	for _, name := range []string{spec.ID, spec.ID + ".vm"} {
		if _, err := os.Lstat(filepath.Join(spec.RunRoot, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("run dir %s of a settled vm run: %v, want it gone", name, err)
		}
	}
	return runResult{out: o, stdout: so.String(), stderr: se.String(), elapsed: elapsed}
}

// TestVMRunsAgentBehindItsWall: stdout, stderr and the exit status cross the link, and the
// agent runs as the node's uid with no capabilities, no_new_privs and two seccomp filters,
// with lo its only network device (V1, V2).
func TestVMRunsAgentBehindItsWall(t *testing.T) {
	h := sharedHost(t)
	// A run root deeper than a unix socket path may be long: the link's socket still binds.
	deep := filepath.Join(h.runRoot, strings.Repeat("deep-", 24))
	res := h.run(t, sandbox.Spec{RunRoot: deep, Argv: []string{"/bin/sh", "-c", "echo hello; id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp)' /proc/self/status; cat /proc/net/dev | wc -l; echo err >&2; exit 3"}})
	t.Logf("outcome %+v\nstdout:\n%s\nstderr:\n%s\n(%v)", res.out, res.stdout, res.stderr, res.elapsed)
	if res.out.Err != nil || res.out.ExitCode != 3 {
		t.Fatalf("outcome %+v, want exit 3", res.out)
	}
	want := fmt.Sprintf("hello\n%d\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t2\n3\n", os.Getuid())
	if res.stdout != want || res.stderr != "err\n" {
		t.Fatalf("stdout %q, stderr %q; want %q and \"err\\n\"", res.stdout, res.stderr, want)
	}
}
