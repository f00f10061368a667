package bwrap_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/pkg/sandbox"
)

// These tests run real bwrap through the real `anet-sandboxd exec` binary, as the unprivileged
// test user with a delegated cgroup v1 subtree (the harness sets that up when run as root).

func TestMain(m *testing.M) {
	testharness.Main(m, testharness.Options{
		Builds: []testharness.Build{
			{Name: "anet-sandboxd", Pkg: "./cmd/anet-sandboxd"},
			{Name: "anet-sandboxd-weak", Pkg: "./cmd/anet-sandboxd", Tags: []string{"anettest"}},
			testharness.RunInit,
		},
		Cgroup:   true,
		CgroupV2: true, // delegated_linux_test.go: the v2 plumbing on a real cgroupfs
	})
}

// host is one test's view of the operator's machine: its own HOME, cache and runtime dirs.
type host struct {
	t       *testing.T
	bin     string
	home    string
	cache   string
	runtime string
	env     []string
}

func newHost(t *testing.T) *host {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bwrap is not installed; these tests need the bubblewrap package: %v", err)
	}
	if !testharness.CgroupDelegated() {
		t.Fatalf("no delegated cgroup: run the tests as root (CI) so the harness delegates one, or as a user owning a memory+pids cgroup v1 subtree")
	}
	base := t.TempDir()
	h := &host{t: t, bin: testharness.Bin(t, "anet-sandboxd"),
		home: filepath.Join(base, "home"), cache: filepath.Join(base, "cache"), runtime: filepath.Join(base, "rt")}
	for _, d := range []string{h.home, h.cache, h.runtime} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + h.home, "XDG_CACHE_HOME=" + h.cache,
		"XDG_RUNTIME_DIR=" + h.runtime, "TMPDIR=" + base, "LANG=C.UTF-8"}
	return h
}

func (h *host) runRoot() string { return filepath.Join(h.cache, "anet", "runs") }

type result struct {
	stdout, stderr string
	code           int
	outcome        outcomeJSON
}

type outcomeJSON struct {
	sandbox.Outcome
	Code  string `json:"code"`
	Error string `json:"error"`
}

// exec runs `anet-sandboxd exec FLAGS -- CMD…` and returns what it printed, its status and
// the run's outcome.
func (h *host) exec(bin string, flags []string, cmd ...string) result {
	h.t.Helper()
	outcome := filepath.Join(h.t.TempDir(), "outcome.json")
	args := append([]string{"exec", "--outcome", outcome}, flags...)
	r := h.command(bin, append(append(args, "--"), cmd...)...)
	if b, err := os.ReadFile(outcome); err == nil {
		if err := json.Unmarshal(b, &r.outcome); err != nil {
			h.t.Fatalf("outcome %s: %v", b, err)
		}
	}
	return r
}

// command runs bin with args in the host's environment.
func (h *host) command(bin string, args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args...)
	c.Env = h.env
	var so, se bytes.Buffer
	c.Stdout, c.Stderr = &so, &se
	err := c.Run()
	r := result{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		h.t.Fatalf("run %s %v: %v", bin, args, err)
	}
	return r
}

func (h *host) sh(flags []string, script string) result {
	return h.exec(h.bin, flags, "/bin/sh", "-c", script)
}

// markerAlive reports whether any of our processes has marker in its command line (a
// unique `sleep N` a run started).
func markerAlive(marker string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})), marker) {
			return true
		}
	}
	return false
}

func uniqueSleep() string {
	return strconv.Itoa(500000 + int(time.Now().UnixNano()%400000))
}

func readLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func assertGone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lstat %s = %v, want it gone", path, err)
	}
}

func isSignal(code int, sig syscall.Signal) bool { return code == 128+int(sig) }
