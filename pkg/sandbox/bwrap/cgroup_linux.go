package bwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// Cgroup limits (S6), in order of preference: a user-systemd transient scope, a delegated
// cgroup v2 subtree, delegated cgroup v1 memory+pids hierarchies, none (no_cgroup_limits).

// LimitsMode is the mechanism that enforces memory and task limits.
type LimitsMode string

// Words is the mode as status and doctor name it.
func (m LimitsMode) Words() string {
	switch m {
	case LimitsSystemd:
		return "systemd scope"
	case LimitsV2:
		return "cgroup v2 delegated"
	case LimitsV1:
		return "cgroup v1 delegated"
	}
	return "none"
}

const (
	LimitsSystemd LimitsMode = "systemd"
	LimitsV2      LimitsMode = "cgroup2"
	LimitsV1      LimitsMode = "cgroup1"
	LimitsNone    LimitsMode = "none"
)

// Mechanism is the detected way to limit runs.
type Mechanism struct {
	Mode LimitsMode
	// Detail says why (for doctor/status); never a secret.
	Detail string
	// V2 is our delegated v2 cgroup dir; Memory and Pids our v1 dirs.
	V2, Memory, Pids string
	// Env is, for the systemd mechanism, the environment systemd-run needs to reach the user
	// manager (XDG_RUNTIME_DIR, DBUS_SESSION_BUS_ADDRESS): a launch's is otherwise empty, and
	// systemd-run then finds no bus. bwrap clears it before the run (--clearenv).
	Env []string
}

// DetectLimits finds the best available mechanism for this process.
func DetectLimits() Mechanism {
	if ok, why := systemdUserAvailable(); ok {
		return Mechanism{Mode: LimitsSystemd, Detail: why, Env: userBusEnv(os.Getenv)}
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Mechanism{Mode: LimitsNone, Detail: "read /proc/self/cgroup: " + err.Error()}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Mechanism{Mode: LimitsNone, Detail: "read /proc/self/mountinfo: " + err.Error()}
	}
	return detectCgroupfs(string(cg), string(mi), delegated)
}

// delegated reports whether dir is ours to create children in (owned by our euid, writable).
func delegated(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not %d", dir, st.Uid, os.Geteuid())
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("%s is not writable: %w", dir, err)
	}
	return nil
}

// detectCgroupfs is the pure part of detection: /proc/self/cgroup and mountinfo texts in,
// mechanism out; ok says whether a dir is delegated to us.
func detectCgroupfs(cgroup, mountinfo string, ok func(string) error) Mechanism {
	paths := map[string]string{} // controller ("" for v2) -> cgroup path
	for _, line := range strings.Split(cgroup, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	mounts := map[string][2]string{} // controller ("" for v2) -> {mount point, root}
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, found := strings.Cut(line, " - ")
		if !found {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		switch qf[0] {
		case "cgroup2":
			mounts[""] = [2]string{pf[4], pf[3]}
		case "cgroup":
			for _, o := range strings.Split(qf[2], ",") {
				mounts[o] = [2]string{pf[4], pf[3]}
			}
		}
	}
	dir := func(ctrl string) string {
		m, okm := mounts[ctrl]
		p, okp := paths[ctrl]
		if !okm || !okp {
			return ""
		}
		rel := p
		if m[1] != "/" {
			rel = strings.TrimPrefix(p, m[1])
		}
		return filepath.Join(m[0], rel)
	}
	var why []string
	if mem, pids := dir("memory"), dir("pids"); mem != "" && pids != "" {
		e1, e2 := ok(mem), ok(pids)
		if e1 == nil && e2 == nil {
			return Mechanism{Mode: LimitsV1, Memory: mem, Pids: pids, Detail: "delegated cgroup v1 " + mem + " and " + pids}
		}
		why = append(why, fmt.Sprintf("cgroup v1 not delegated: %v", errors.Join(e1, e2)))
	}
	if v2 := dir(""); v2 != "" {
		ctrls, _ := os.ReadFile(filepath.Join(v2, "cgroup.controllers"))
		sub, _ := os.ReadFile(filepath.Join(v2, "cgroup.subtree_control"))
		switch {
		case !hasWords(string(ctrls), "memory", "pids"):
			why = append(why, "cgroup v2 "+v2+" lacks the memory and pids controllers")
		case ok(v2) != nil:
			why = append(why, fmt.Sprintf("cgroup v2 not delegated: %v", ok(v2)))
		case !hasWords(string(sub), "memory", "pids"):
			// A run's cgroup below would have no memory.max or pids.max to write, and they
			// cannot be enabled for children while this cgroup holds processes (ours): every
			// start would fail. Without limits the rest of the wall still holds (S6).
			why = append(why, "cgroup v2 "+v2+" is delegated but does not enable memory and pids for its children (cgroup.subtree_control: "+strings.TrimSpace(string(sub))+")")
		default:
			return Mechanism{Mode: LimitsV2, V2: v2, Detail: "delegated cgroup v2 " + v2}
		}
	}
	if len(why) == 0 {
		why = append(why, "no memory and pids cgroup controllers found")
	}
	return Mechanism{Mode: LimitsNone, Detail: strings.Join(why, "; ")}
}

func hasWords(s string, words ...string) bool {
	have := map[string]bool{}
	for _, w := range strings.Fields(s) {
		have[w] = true
	}
	for _, w := range words {
		if !have[w] {
			return false
		}
	}
	return true
}

// leaf is one run's cgroup(s).
type leaf struct {
	mode LimitsMode
	// dirs are the run's cgroup dirs; procs the cgroup.procs files confine writes the
	// blocked sandbox child's pid to.
	dirs  []string
	procs []string
	// tasks are the cgroup v1 tasks files the launcher's starting thread joins, so the run is
	// born in them (startBorn); none on cgroup v2, where the launcher moves init from outside.
	tasks []string
	mem   string // dir holding the memory files
	pids  string // dir holding the pids files
}

const leafPrefix = "anet-run-"

// tasks are the cgroup v1 tasks files of the launcher's own cgroups, which startBorn's thread
// joins back; none for any other mechanism.
func (m Mechanism) tasks() []string {
	if m.Mode != LimitsV1 {
		return nil
	}
	return []string{filepath.Join(m.Memory, "tasks"), filepath.Join(m.Pids, "tasks")}
}

// newLeaf makes the run's cgroup(s) under m, writes the limits and reads them back (S6: report
// full only after reading back). The caller moves the run in with confine.
func (m Mechanism) newLeaf(id string, lim sandbox.Limits) (*leaf, error) {
	mem := (lim.Memory + 4095) &^ 4095 // the kernel stores pages; write what reads back
	l := &leaf{mode: m.Mode}
	mk := func(parent string) (string, error) {
		sweepLeaves(parent)
		d := filepath.Join(parent, leafPrefix+id)
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", fmt.Errorf("cgroup mkdir %s: %w", d, err)
		}
		l.dirs = append(l.dirs, d)
		l.procs = append(l.procs, filepath.Join(d, "cgroup.procs"))
		if m.Mode == LimitsV1 {
			l.tasks = append(l.tasks, filepath.Join(d, "tasks"))
		}
		return d, nil
	}
	var err error
	switch m.Mode {
	case LimitsV1:
		if l.mem, err = mk(m.Memory); err != nil {
			return nil, err
		}
		if l.pids, err = mk(m.Pids); err != nil {
			l.remove()
			return nil, err
		}
		err = errors.Join(
			launch.WriteNumber(l.mem, "memory.limit_in_bytes", mem),
			writeOptional(l.mem, "memory.memsw.limit_in_bytes", mem), // swap must not extend it
			launch.WriteNumber(l.pids, "pids.max", lim.Tasks),
		)
	case LimitsV2:
		if l.mem, err = mk(m.V2); err != nil {
			return nil, err
		}
		l.pids = l.mem
		err = errors.Join(
			launch.WriteNumber(l.mem, "memory.max", mem),
			writeOptional(l.mem, "memory.swap.max", 0),
			launch.WriteNumber(l.pids, "pids.max", lim.Tasks),
		)
	default:
		return nil, fmt.Errorf("cgroup leaf: mode %s has no cgroupfs leaf", m.Mode)
	}
	if err != nil {
		l.remove()
		return nil, fmt.Errorf("cgroup limits: %w", err)
	}
	return l, nil
}

// sweepLeaves removes empty run cgroups a killed launcher left behind (rmdir fails on a busy
// one). A leaf younger than a minute may belong to a run another launcher is starting right
// now (made, not yet joined), so it is left alone.
func sweepLeaves(parent string) {
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), leafPrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
			_ = os.Remove(filepath.Join(parent, e.Name()))
		}
	}
}

func writeOptional(dir, file string, v int64) error {
	p := filepath.Join(dir, file)
	if _, err := os.Stat(p); err != nil {
		return nil
	}
	return launch.WriteNumber(dir, file, v)
}

// hit says which cgroup limit the run ran into, if any.
func (l *leaf) hit() reasons.Code {
	if l == nil {
		return ""
	}
	mem := filepath.Join(l.mem, "memory.events")
	if l.mode == LimitsV1 {
		mem = filepath.Join(l.mem, "memory.oom_control")
	}
	return launch.LimitHit(mem, filepath.Join(l.pids, "pids.events"))
}

// kill SIGKILLs every process left in the run's cgroups until they are empty.
func (l *leaf) kill() {
	if l == nil {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		left := 0
		for _, p := range l.procs {
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				// Never the launcher itself, whose starting thread is in a run's cgroups
				// for a moment (startBorn).
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 && pid != os.Getpid() {
					left++
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if left == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// remove deletes the run's cgroup dirs (after kill); retried briefly while the kernel
// finishes tearing down the killed tasks.
func (l *leaf) remove() {
	if l == nil {
		return
	}
	for _, d := range l.dirs {
		for i := 0; i < 400; i++ {
			if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
