package testharness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupV2 is a cgroup v2 dir delegated to the test user by ownership, the way the system
// manager hands a Delegate= unit's cgroup to its User= (the dir and the files
// /sys/kernel/cgroup/delegate lists are chowned), with the test process moved into it. On a
// hybrid host (v1 memory and pids) it has no memory or pids controller: it proves the
// plumbing (moving processes, starting one in a cgroup, cgroup.kill, removal) on a real
// cgroupfs, not the limits.
type cgroupV2 struct{ dir string }

// delegateCgroupV2 makes the dir below the harness's own cgroup v2.
func delegateCgroupV2(uid, gid int) (*cgroupV2, error) {
	mount, path, err := ownCgroupV2()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(mount, path, fmt.Sprintf("anet-test-v2-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	files := []string{"cgroup.procs", "cgroup.subtree_control", "cgroup.threads"}
	if b, err := os.ReadFile("/sys/kernel/cgroup/delegate"); err == nil {
		files = strings.Fields(string(b))
	}
	cg := &cgroupV2{dir: dir}
	if err := os.Chown(dir, uid, gid); err != nil {
		cg.remove()
		return nil, err
	}
	for _, f := range files {
		if err := os.Chown(filepath.Join(dir, f), uid, gid); err != nil && !os.IsNotExist(err) {
			cg.remove()
			return nil, err
		}
	}
	return cg, nil
}

// ownCgroupV2 is the mount point of the cgroup2 hierarchy and this process's path in it.
func ownCgroupV2() (mount, path string, err error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return "", "", fmt.Errorf("this process is in no cgroup v2 hierarchy")
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, found := strings.Cut(s.Text(), " - ")
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if found && len(pf) >= 5 && len(qf) > 0 && qf[0] == "cgroup2" && pf[3] == "/" {
			return pf[4], path, nil
		}
	}
	return "", "", fmt.Errorf("no cgroup2 hierarchy is mounted")
}

func (cg *cgroupV2) adopt(pid int) error {
	if err := os.WriteFile(filepath.Join(cg.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("move pid %d into %s: %w", pid, cg.dir, err)
	}
	return nil
}

// remove kills whatever the tests left in the dir and removes it, deepest first.
func (cg *cgroupV2) remove() {
	var dirs []string
	filepath.WalkDir(cg.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		removeCgroupDir(dirs[i])
	}
}

// inCgroupV2 reports whether this process is in the cgroup v2 dir.
func inCgroupV2(dir string) bool {
	mount, path, err := ownCgroupV2()
	return err == nil && filepath.Join(mount, path) == dir
}
