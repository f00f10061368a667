//go:build anettest && linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
	"anet.dev/anet/pkg/sandbox/seccomp"
)

// runLaunch times starting /bin/true until it has exited: through `anet-sandboxd exec` and
// through the daemon's launcher (probe cached), next to bare bwrap, bwrap with the same
// hardening (namespaces, the two seccomp filters, read-only system) and sandbox-runtime.
func runLaunch(cfg config, rep *report) error {
	rounds := cfg.rounds
	if rounds == 0 {
		rounds = 15
	}
	tmp, err := os.MkdirTemp("", "anet-bench-launch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	self, err := filepath.Abs(filepath.Join(cfg.bin, "anet-sandboxd"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(self); err != nil {
		return fmt.Errorf("%w (run make build)", err)
	}
	hardened, closeFilters, err := hardenedBwrap(filepath.Join(tmp, "work"), "")
	if err != nil {
		return err
	}
	defer closeFilters()
	// The same hardened bwrap with an empty Go program as pid 1 in front of /bin/true: the
	// floor of any init written in Go (the node's is one), beside bwrap's own C pid 1.
	var goPid1 func() (float64, error)
	goPid1Missing := ""
	stub := cfg.goPid1
	if stub == "" {
		stub, err = buildGoPid1(tmp)
	}
	if err != nil {
		goPid1Missing = err.Error()
	} else {
		var closeStub func()
		if goPid1, closeStub, err = hardenedBwrap(filepath.Join(tmp, "work"), stub); err != nil {
			return err
		}
		defer closeStub()
	}
	l, err := launch.New(launch.Options{Backend: bwrap.Name, Self: self})
	if err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	r, err := l.Probe(context.Background())
	if err != nil || !r.OK {
		return fmt.Errorf("probe: %+v, %v", r, err)
	}
	// The launch's cost depends on the limits mechanism, which is this process's cgroup's:
	// a systemd scope per launch (systemd-run, D-Bus) costs what a delegated subtree does not.
	// The delegated v2 launch is measured only where the bench runs inside a unit that
	// delegates (Delegate=memory pids, as the packaged units), on a cgroup v2 host with a user
	// manager (the hosts rig's Debian 12 guest is one):
	//   systemd-run --user --pipe --wait --same-dir -p Delegate=yes -E PATH="$PATH" make bench-compare
	// The note says which mechanism the numbers are of.
	rep.note("launch: cgroup limits by %s (%s)", r.Mechanism, r.MechanismDetail)
	srt := filepath.Join(cfg.anchors, "srt", "node_modules", ".bin", "srt")
	srtMissing := ""
	if _, err := os.Stat(srt); err != nil {
		srtMissing = "not installed in " + cfg.anchors
	}
	cache := filepath.Join(tmp, "cache")
	execEnv := append(os.Environ(), "XDG_CACHE_HOME="+cache)

	var oursExec, oursLaunch, bare, hard, goFloor, srtT []float64
	for i := range rounds {
		// A launch right after another shares the kernel's RCU grace period that the first
		// move of a task into a cgroup may wait for; a peer's task arrives at a quiet host, so
		// each of ours starts after a pause (the anchors touch no cgroup).
		time.Sleep(launchPause)
		d, err := timeCmd(execEnv, self, "exec", "--", "/bin/true")
		if err != nil {
			return fmt.Errorf("anet-sandboxd exec: %w", err)
		}
		oursExec = append(oursExec, d)
		time.Sleep(launchPause)
		if d, err = timeLaunch(l, filepath.Join(tmp, "runs"), i); err != nil {
			return fmt.Errorf("launcher: %w", err)
		}
		oursLaunch = append(oursLaunch, d)
		if d, err = timeCmd(nil, "bwrap", "--ro-bind", "/", "/", "/bin/true"); err != nil {
			return fmt.Errorf("bare bwrap: %w", err)
		}
		bare = append(bare, d)
		if d, err = hardened(); err != nil {
			return fmt.Errorf("hardened bwrap: %w", err)
		}
		hard = append(hard, d)
		if goPid1 != nil {
			if d, err = goPid1(); err != nil {
				return fmt.Errorf("hardened bwrap with a Go pid 1: %w", err)
			}
			goFloor = append(goFloor, d)
		}
		if srtMissing == "" {
			c := exec.Command(srt, "/bin/true")
			c.Dir = tmp
			if d, err = timeRun(c); err != nil {
				srtMissing = err.Error()
			} else {
				srtT = append(srtT, d)
			}
		}
	}
	anchors := []anchor{{Name: "bare bwrap", Value: median(bare)}, {Name: "hardened bwrap", Value: median(hard)},
		{Name: "sandbox-runtime", Value: median(srtT), Missing: srtMissing}}
	ratio := median(oursExec) / median(hard)
	rep.add(metric{What: "anet-sandboxd exec -- /bin/true", Unit: "ms", Ours: median(oursExec), Anchors: anchors,
		RatioTo: "hardened", Ratio: ratio, Aim: "≤ 1.5× hardened", Met: ratio <= 1.5})
	if srtMissing == "" {
		faster := median(srtT) / median(oursExec)
		rep.add(metric{What: "exec, times faster than sandbox-runtime", Unit: "ms", Ours: median(oursExec),
			Anchors: anchors[2:], RatioTo: "faster", Ratio: faster, Aim: "≥ 20× faster", Met: faster >= 20})
	}
	floor := anchor{Name: "hardened + Go pid 1", Value: median(goFloor), Missing: goPid1Missing}
	ratio = median(oursLaunch) / median(hard)
	rep.add(metric{What: "daemon's launch, probe cached", Unit: "ms", Ours: median(oursLaunch),
		Anchors: []anchor{anchors[1], floor}, RatioTo: "hardened", Ratio: ratio, Aim: "≤ 1.5× hardened", Met: ratio <= 1.5})
	if goPid1Missing == "" {
		// The aim against the floor any Go init has, on the mechanism this bench runs under
		// (the delegated launch is the one it is set for: clone3 into the run's leaf).
		ratio = median(oursLaunch) / floor.Value
		rep.add(metric{What: "daemon's launch (" + r.Mechanism + "), to the Go floor", Unit: "ms", Ours: median(oursLaunch),
			Anchors: []anchor{floor}, RatioTo: "hardened + Go pid 1", Ratio: ratio, Aim: "≤ 1.15× the Go floor", Met: ratio <= 1.15})
		rep.add(metric{What: "hardened bwrap + empty Go pid 1", Unit: "ms", Ours: floor.Value, Anchors: anchors[1:2],
			RatioTo: "hardened", Ratio: floor.Value / median(hard), Aim: "none: a floor", Info: true})
	}
	return nil
}

// launchPause is longer than an RCU grace period of an idle kernel (a few milliseconds).
const launchPause = 100 * time.Millisecond

func timeCmd(env []string, name string, args ...string) (float64, error) {
	c := exec.Command(name, args...)
	c.Env = env
	return timeRun(c)
}

// timeRun runs c to its end and returns the wall time in milliseconds.
func timeRun(c *exec.Cmd) (float64, error) {
	t0 := time.Now()
	if out, err := c.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s: %v: %s", c.Path, err, out)
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e6, nil
}

func timeLaunch(l *launch.Launcher, root string, i int) (float64, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return 0, err
	}
	t0 := time.Now()
	spec := sandbox.Spec{ID: fmt.Sprintf("bench-%d-%d", os.Getpid(), i), Mode: sandbox.ModeSandbox, Argv: []string{"/bin/true"}, RunRoot: root}
	r, err := l.Start(context.Background(), spec, sandbox.Stdio{})
	if err != nil {
		return 0, err
	}
	if o := r.Wait(); o.ExitCode != 0 || o.Err != nil {
		return 0, fmt.Errorf("outcome %+v", o)
	}
	d := float64(time.Since(t0).Nanoseconds()) / 1e6
	// The peer's answer has its outcome now; the removal of the run's dirs and cgroups that
	// follows must not overlap the anchors' measurements.
	launch.WaitSettled(r)
	return d, nil
}

// buildGoPid1 builds ./gopid1 into dir with the toolchain that runs the bench ($GO, else go
// on PATH), static like the node's init.
func buildGoPid1(dir string) (string, error) {
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	out := filepath.Join(dir, "gopid1")
	c := exec.Command(goTool, "build", "-trimpath", "-o", out, "anet.dev/anet/internal/benchcompare/gopid1")
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the Go pid 1: %v: %s", err, msg)
	}
	return out, nil
}

// hardenedBwrap returns a timer of bwrap with the run's hardening and filters but no node
// code, running /bin/true, or with pid1 set, pid1 as pid 1 starting /bin/true.
func hardenedBwrap(dir, pid1 string) (func() (float64, error), func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	progs, err := seccomp.Filters(seccomp.Options{})
	if err != nil {
		return nil, nil, err
	}
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, p := range progs {
		f, err := seccomp.WriteMemfd(p)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		files = append(files, f)
	}
	args := []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
		"--unshare-net", "--disable-userns", "--new-session", "--die-with-parent", "--cap-drop", "ALL", "--clearenv",
		"--proc", "/proc", "--dev", "/dev", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--bind", dir, "/tmp", "--add-seccomp-fd", "3", "--add-seccomp-fd", "4"}
	if pid1 != "" {
		args = append(args, "--as-pid-1", "--ro-bind", pid1, "/pid1", "--", "/pid1", "/bin/true")
	} else {
		args = append(args, "--", "/bin/true")
	}
	return func() (float64, error) {
		for _, f := range files {
			if _, err := f.Seek(0, 0); err != nil {
				return 0, err
			}
		}
		c := exec.Command("bwrap", args...)
		c.ExtraFiles = files
		return timeRun(c)
	}, closeAll, nil
}
