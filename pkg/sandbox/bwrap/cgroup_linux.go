package bwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// Cgroup limits (S6), in order of preference: the cgroup v2 subtree a systemd unit delegates
// to the node (Delegate=, the packaged units; set up once per helper start, see
// delegated_linux.go), a user-systemd transient scope per run (systemd-run: the node started
// by hand under a user manager), delegated cgroup v1 memory+pids hierarchies, none
// (no_cgroup_limits). The choice, and why each better one was not taken, is made once per
// helper start (New), never per launch.

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
	// Detail says which subtree or manager, and why no better mechanism was taken (for
	// doctor); never a secret.
	Detail string
	// V2 is the delegated v2 subtree the runs' cgroups are made in (its own processes are in
	// V2/ServiceLeaf); Memory and Pids our v1 dirs.
	V2, Memory, Pids string
	// busEnv is what systemd-run needs to find the user manager (LimitsSystemd): the
	// launcher's environment is otherwise empty, and bwrap clears it for the run.
	busEnv []string
}

// SetUpLimits chooses the best available mechanism for this process and, for a delegated v2
// subtree, sets it up (moves the unit's processes into ServiceLeaf, enables memory and pids
// for its children, sweeps the leaves a killed launcher left). A step that fails falls back
// to the next mechanism, and Detail says why. Called once per helper start.
func SetUpLimits() Mechanism {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Mechanism{Mode: LimitsNone, Detail: "read /proc/self/cgroup: " + err.Error()}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Mechanism{Mode: LimitsNone, Detail: "read /proc/self/mountinfo: " + err.Error()}
	}
	return decideLimits(string(cg), string(mi), limitsHost{
		delegatedV2: func(dir, path string, inLeaf bool) error {
			return judgeV2(readV2Facts(dir, path, inLeaf), userUnitDelegates)
		},
		setUpV2:     setUpV2,
		systemd:     systemdUserAvailable,
		delegatedV1: delegated,
	})
}

// limitsHost is what the choice asks of the host beyond the /proc texts; tests fake it.
type limitsHost struct {
	// delegatedV2 says whether the v2 dir (cgroup path path) is delegated to us (judgeV2);
	// inLeaf: we are in its ServiceLeaf.
	delegatedV2 func(dir, path string, inLeaf bool) error
	// setUpV2 readies a delegated v2 subtree for runs' cgroups (setUpV2).
	setUpV2 func(dir string) error
	// systemd reports a usable user manager, why (or why not), and the variables systemd-run
	// needs to reach it.
	systemd func() (ok bool, why string, env []string)
	// delegatedV1 says whether a v1 dir is ours to create children in.
	delegatedV1 func(dir string) error
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

// cgroupDirs is where this process sits in each mounted hierarchy, from /proc texts.
type cgroupDirs struct {
	// v2 is our cgroup v2 dir and v2Path its cgroup path (as /proc/self/cgroup says it);
	// memory and pids our v1 dirs. "" where that hierarchy is not mounted.
	v2, v2Path, memory, pids string
}

// parseCgroups reads /proc/self/cgroup and /proc/self/mountinfo texts.
func parseCgroups(cgroup, mountinfo string) cgroupDirs {
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
		if len(pf) < 5 || len(qf) < 3 || !filepath.IsAbs(pf[4]) {
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
		if !strings.HasPrefix(p, "/") || slices.Contains(strings.Split(rel, "/"), "..") {
			return "" // a dir outside the hierarchy is no cgroup of ours
		}
		return filepath.Join(m[0], rel)
	}
	d := cgroupDirs{v2: dir(""), memory: dir("memory"), pids: dir("pids")}
	if d.v2 != "" {
		d.v2Path = paths[""]
	}
	return d
}

// decideLimits is the choice (pure but for what h asks): /proc/self/cgroup and mountinfo
// texts in, mechanism out, with the reasons each better mechanism was not taken.
func decideLimits(cgroup, mountinfo string, h limitsHost) Mechanism {
	d := parseCgroups(cgroup, mountinfo)
	var why []string
	if d.v2 != "" {
		// A helper restarted by anetd (or a launcher started from the node's own processes)
		// is born in the service leaf: the subtree is its parent.
		root, path := d.v2, d.v2Path
		inLeaf := filepath.Base(path) == ServiceLeaf
		if inLeaf {
			root, path = filepath.Dir(root), filepath.Dir(path)
		}
		if err := h.delegatedV2(root, path, inLeaf); err != nil {
			why = append(why, fmt.Sprintf("cgroup v2 not delegated: %v", err))
		} else if err := h.setUpV2(root); err != nil {
			why = append(why, fmt.Sprintf("cgroup v2 %s is delegated but could not be set up: %v", root, err))
		} else {
			return Mechanism{Mode: LimitsV2, V2: root, Detail: "delegated cgroup v2 subtree " + root +
				" (the node's own processes in " + ServiceLeaf + ", each run in an " + leafPrefix + "* cgroup beside it)"}
		}
	}
	// because adds why each better mechanism was not taken (doctor shows it, F2).
	because := func(m Mechanism) Mechanism {
		if len(why) > 0 {
			m.Detail += "; " + strings.Join(why, "; ")
		}
		return m
	}
	ok, s, env := h.systemd()
	if ok {
		return because(Mechanism{Mode: LimitsSystemd, Detail: s, busEnv: env})
	}
	why = append(why, "no systemd user scope: "+s)
	if d.memory != "" && d.pids != "" {
		e1, e2 := h.delegatedV1(d.memory), h.delegatedV1(d.pids)
		if e1 == nil && e2 == nil {
			return because(Mechanism{Mode: LimitsV1, Memory: d.memory, Pids: d.pids, Detail: "delegated cgroup v1 " + d.memory + " and " + d.pids})
		}
		why = append(why, fmt.Sprintf("cgroup v1 not delegated: %v", errors.Join(e1, e2)))
	}
	if d.v2 == "" && (d.memory == "" || d.pids == "") {
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
	// dirs are the run's cgroup dirs; procs their cgroup.procs files, which kill empties.
	dirs  []string
	procs []string
	// tasks are the cgroup v1 tasks files the launcher's starting thread joins, so the run is
	// born in them (startBorn); none on cgroup v2.
	tasks []string
	// fd is the cgroup v2 leaf, open: bwrap is cloned into it (CLONE_INTO_CGROUP), and its
	// flock tells a sweeping launcher the leaf is in use. nil on v1.
	fd   *os.File
	mem  string // dir holding the memory files
	pids string // dir holding the pids files
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
// full only after reading back). The run is born in them: on v1 by startBorn, on v2 by
// cloning bwrap into l.fd.
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
		l.tasks = append(l.tasks, filepath.Join(d, "tasks"))
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
		sweepV2(m.V2)
		d, f, err := makeV2Leaf(m.V2, leafPrefix+id)
		if err != nil {
			return nil, err
		}
		l.dirs, l.procs, l.fd, l.mem, l.pids = []string{d}, []string{filepath.Join(d, "cgroup.procs")}, f, d, d
		err = errors.Join(
			launch.WriteNumber(d, "memory.max", mem),
			writeOptional(d, "memory.swap.max", 0), // swap must not extend it
			launch.WriteNumber(d, "pids.max", lim.Tasks),
		)
		if err != nil {
			l.remove()
			return nil, fmt.Errorf("cgroup limits: %w", err)
		}
		return l, nil
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

// kill SIGKILLs every process left in the run's cgroups until they are empty: at once
// through cgroup.kill where the kernel has it (v2, 5.14), else one pid at a time.
func (l *leaf) kill() {
	if l == nil {
		return
	}
	if l.mode == LimitsV2 {
		for _, d := range l.dirs {
			_ = os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0)
		}
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
// finishes tearing down the killed tasks. The v2 leaf's lock goes last: until then no
// sweeping launcher takes the leaf for a dead run's.
func (l *leaf) remove() {
	if l == nil {
		return
	}
	for _, d := range l.dirs {
		removeCgroupDir(d)
	}
	if l.fd != nil {
		l.fd.Close()
		l.fd = nil
	}
}

// removeCgroupDir removes an emptied cgroup dir, retried briefly while the kernel finishes
// tearing down its killed tasks.
func removeCgroupDir(d string) {
	for i := 0; i < 400; i++ {
		if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
