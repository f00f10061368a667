package testharness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupV1 is a memory+pids subtree delegated to the test user by ownership, the way an
// administrator (or a systemd unit with Delegate=yes) hands one to the daemon's user.
type cgroupV1 struct{ memory, pids string }

func delegateCgroupV1(uid, gid int) (*cgroupV1, error) {
	name := fmt.Sprintf("anet-test-%d", os.Getpid())
	cg := &cgroupV1{
		memory: filepath.Join("/sys/fs/cgroup/memory", name),
		pids:   filepath.Join("/sys/fs/cgroup/pids", name),
	}
	for _, dir := range []string{cg.memory, cg.pids} {
		if _, err := os.Stat(filepath.Dir(dir)); err != nil {
			return nil, fmt.Errorf("this host has no cgroup v1 %s hierarchy (%v); the cgroupfs limits tests need one", filepath.Base(filepath.Dir(dir)), err)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		// Delegation by ownership: the directory (to make children) and the files the
		// delegatee must write (to move its processes and set limits of its children).
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Name() == "cgroup.procs" || e.Name() == "tasks" {
				if err := os.Chown(filepath.Join(dir, e.Name()), uid, gid); err != nil {
					return nil, err
				}
			}
		}
	}
	return cg, nil
}

func (cg *cgroupV1) adopt(pid int) error {
	for _, dir := range []string{cg.memory, cg.pids} {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("move pid %d into %s: %w", pid, dir, err)
		}
	}
	return nil
}

// remove kills whatever the tests left in the subtree and removes it, deepest first.
func (cg *cgroupV1) remove() {
	for _, root := range []string{cg.memory, cg.pids} {
		var dirs []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			removeCgroupDir(dirs[i])
		}
	}
}

func removeCgroupDir(dir string) {
	for attempt := 0; attempt < 50; attempt++ {
		if data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					killPid(pid)
				}
			}
		}
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
