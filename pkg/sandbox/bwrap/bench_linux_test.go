package bwrap_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
	"anet.dev/anet/pkg/sandbox/seccomp"
)

// Measured in make bench: a launch (probe cached) against a bare `bwrap --ro-bind / / true` and a
// bare bwrap with the same hardening, in one run; and the uncached probe. Reported, not
// asserted: the ratios are the figures (aim: launch within 1.5x of hardened bare bwrap).

// firstByte records when the agent's first output arrives: the metric is the time
// from the launch request to the agent's first instruction, not the teardown after it.
type firstByte struct{ at time.Time }

func (f *firstByte) Write(p []byte) (int, error) {
	if f.at.IsZero() {
		f.at = time.Now()
	}
	return len(p), nil
}

func bareBwrap(b *testing.B) time.Duration {
	var fb firstByte
	c := exec.Command("bwrap", "--ro-bind", "/", "/", "/bin/echo", "x")
	c.Stdout = &fb
	t0 := time.Now()
	if err := c.Run(); err != nil {
		b.Fatalf("bare bwrap: %v", err)
	}
	return fb.at.Sub(t0)
}

func hardenedBwrap(b *testing.B, dir string) time.Duration {
	progs, err := seccomp.Filters(seccomp.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var files []*os.File
	for _, p := range progs {
		f, err := seccomp.WriteMemfd(p)
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	args := []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
		"--unshare-net", "--disable-userns", "--new-session", "--die-with-parent", "--cap-drop", "ALL", "--clearenv",
		"--proc", "/proc", "--dev", "/dev", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--bind", dir, "/tmp", "--add-seccomp-fd", "3", "--add-seccomp-fd", "4", "--", "/bin/echo", "x"}
	var fb firstByte
	c := exec.Command("bwrap", args...)
	c.ExtraFiles = files
	c.Stdout = &fb
	t0 := time.Now()
	if err := c.Run(); err != nil {
		b.Fatalf("hardened bwrap: %v", err)
	}
	return fb.at.Sub(t0)
}

func launchOne(b *testing.B, l *launch.Launcher, root string) time.Duration {
	var fb firstByte
	t0 := time.Now()
	if _, err := l.Probe(context.Background()); err != nil {
		b.Fatal(err)
	}
	spec := sandbox.Spec{ID: "bench-" + uniqueSleep(), Mode: sandbox.ModeSandbox, Argv: []string{"/bin/echo", "x"}, RunRoot: root}
	r, err := l.Start(context.Background(), spec, sandbox.Stdio{Stdout: &fb})
	if err != nil {
		b.Fatal(err)
	}
	if o := r.Wait(); o.ExitCode != 0 || o.Err != nil {
		b.Fatalf("launch outcome %+v", o)
	}
	launch.WaitSettled(r) // the removal follows the outcome; it must not overlap the next variant
	return fb.at.Sub(t0)
}

// benchLauncher is the launcher serve uses: the probe gate and cache, the mux, the backend.
func benchLauncher(b *testing.B) *launch.Launcher {
	l, err := launch.New(launch.Options{Backend: bwrap.Name, Self: filepath.Join(os.Getenv("ANET_TEST_BIN_DIR"), "anet-sandboxd")})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkLaunch reports each variant's whole run (ns/op) and, in "ratios", the launch's
// time to first output relative to both baselines, measured interleaved in the same run so
// machine load affects all alike.
func BenchmarkLaunch(b *testing.B) {
	l := benchLauncher(b)
	dir := b.TempDir()
	b.Run("bare-bwrap", func(b *testing.B) {
		for range b.N {
			bareBwrap(b)
		}
	})
	b.Run("hardened-bwrap", func(b *testing.B) {
		for range b.N {
			hardenedBwrap(b, dir)
		}
	})
	b.Run("launch-cached-probe", func(b *testing.B) {
		for range b.N {
			launchOne(b, l, dir)
		}
	})
	b.Run("ratios", func(b *testing.B) {
		var bare, hard, ours time.Duration
		for range b.N {
			bare += bareBwrap(b)
			hard += hardenedBwrap(b, dir)
			ours += launchOne(b, l, dir)
		}
		b.ReportMetric(float64(ours)/float64(hard), "launch/hardened")
		b.ReportMetric(float64(ours)/float64(bare), "launch/bare")
	})
}

// BenchmarkProbeUncached is the probe's cost when the cache is cold.
func BenchmarkProbeUncached(b *testing.B) {
	l, err := bwrap.New(bwrap.Config{Self: filepath.Join(os.Getenv("ANET_TEST_BIN_DIR"), "anet-sandboxd")})
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		r, err := l.Probe(context.Background())
		if err != nil || !r.OK {
			b.Fatalf("probe = %+v, %v", r, err)
		}
	}
}
