//go:build anettest && linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runRSS starts anetd (which starts its two helpers) on an empty node, waits until it has
// settled, and sums the resident memory of the three processes.
func runRSS(cfg config, rep *report) error {
	tmp, err := os.MkdirTemp("", "anet-bench-rss-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp}
	for _, d := range []string{"config", "data", "runtime", "cache"} {
		p := filepath.Join(tmp, d)
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		env = append(env, "XDG_"+strings.ToUpper(d)+map[bool]string{true: "_DIR", false: "_HOME"}[d == "runtime"]+"="+p)
	}
	anetd, err := filepath.Abs(filepath.Join(cfg.bin, "anetd"))
	if err != nil {
		return err
	}
	cmd := exec.Command(anetd)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start anetd (make build): %w", err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	var pids []int
	for len(pids) < 2 {
		if time.Now().After(deadline) {
			return fmt.Errorf("anetd started %d of its 2 helpers within 30 s", len(pids))
		}
		time.Sleep(100 * time.Millisecond)
		pids = children(cmd.Process.Pid)
	}
	time.Sleep(3 * time.Second) // idle: start-up done, nothing to do
	total := rss(cmd.Process.Pid)
	for _, p := range children(cmd.Process.Pid) {
		total += rss(p)
	}
	mib := float64(total) / 1024
	rep.add(metric{What: "idle RSS, three processes", Unit: "MiB", Ours: mib, Aim: "≤ 40 MiB", Met: mib <= 40})
	return nil
}

// children lists the pids whose parent is pid (any of its threads may have started them).
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// rss returns VmRSS of pid in KiB.
func rss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
