package bwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A cgroup v2 subtree delegated to the node (S6): the packaged units set Delegate=, so the
// unit's cgroup is the node's to divide. cgroup v2's "no internal processes" rule lets
// controllers be enabled for a cgroup's children only once the cgroup itself holds no
// process, and the unit's cgroup holds anetd and both helpers. So once per helper start
// (setUpV2) every process of it moves into the leaf ServiceLeaf, and memory and pids are
// enabled for its children. Each run then gets a child of its own, anet-run-ID, beside
// ServiceLeaf, and bwrap is cloned straight into it (clone3 CLONE_INTO_CGROUP): the run is in
// its cgroup before its first instruction, and nothing is moved from outside.

// ServiceLeaf is the child of the delegated subtree that holds the node's own processes
// (anetd, anet-sandboxd, anet-egress), so that the subtree itself holds none.
const ServiceLeaf = "anet-service"

// v2Controllers are the controllers the runs' cgroups need, enabled for the subtree's
// children.
var v2Controllers = []string{"memory", "pids"}

// v2Facts is what decides whether a cgroup v2 dir is delegated to this process: read from the
// host by readV2Facts, judged by judgeV2.
type v2Facts struct {
	Dir  string // the dir judged
	Path string // its cgroup path, as /proc/self/cgroup names it
	// StatErr is why Dir could not be looked at; nothing else is read then.
	StatErr     error
	Euid, Owner int
	// Unwritable are the files of Dir this process needs to write and cannot: the dir itself
	// (children), cgroup.procs (moving the node's processes), cgroup.subtree_control.
	Unwritable []string
	// Type is cgroup.type, "" when there is none (the root of the hierarchy has none).
	Type        string
	Controllers string // cgroup.controllers
	// Marked is the system manager's delegation mark (trusted.delegate or user.delegate =
	// "1"); a user manager sets none.
	Marked bool
	// Divided: this process is in Dir's ServiceLeaf and Dir's children already have memory
	// and pids, that is an earlier helper start set Dir up (a helper restarted by anetd, or
	// exec started from the node's own processes).
	Divided bool
}

// readV2Facts reads dir's facts from the host; inLeaf: this process is in its ServiceLeaf.
func readV2Facts(dir, path string, inLeaf bool) v2Facts {
	f := v2Facts{Dir: dir, Path: path, Euid: os.Geteuid()}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		f.StatErr = err
		return f
	}
	f.Owner = int(st.Uid)
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "cgroup.subtree_control")} {
		if unix.Access(p, unix.W_OK) != nil {
			f.Unwritable = append(f.Unwritable, filepath.Base(p))
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.type")); err == nil {
		f.Type = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); err == nil {
		f.Controllers = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil && inLeaf {
		f.Divided = hasWords(string(b), v2Controllers...)
	}
	buf := make([]byte, 8)
	for _, name := range []string{"trusted.delegate", "user.delegate"} {
		if n, err := unix.Getxattr(dir, name, buf); err == nil && string(buf[:n]) == "1" {
			f.Marked = true
		}
	}
	return f
}

// userManager matches the cgroup of a user's manager, user@UID.service.
var userManager = regexp.MustCompile(`^user@[0-9]+\.service$`)

// unitOf returns the systemd unit whose cgroup path is, or holds, path: its nearest component
// that names a service or a scope ("" for none: a cgroup no manager made), and whether that
// unit is a user manager's (below user@UID.service).
func unitOf(path string) (unit string, user bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	at := -1
	for i := len(parts) - 1; i >= 0; i-- {
		if strings.HasSuffix(parts[i], ".service") || strings.HasSuffix(parts[i], ".scope") {
			at = i
			break
		}
	}
	if at < 0 {
		return "", false
	}
	for _, p := range parts[:at] {
		if userManager.MatchString(p) {
			return parts[at], true
		}
	}
	return parts[at], false
}

// judgeV2 says whether f's dir is delegated to this process, or why not. Ownership is the
// proof where a manager gives it only with delegation: the system manager chowns a unit's
// cgroup to its User= only for Delegate=, and an administrator's chown is a delegation too.
// It proves nothing below a user manager, whose every cgroup is the user's, delegated or
// not (a terminal's scope is the user's too, and must not be divided): there the manager
// itself is asked (askUser, once per helper start), unless an earlier start of the node
// asked and divided it already (Divided). As root every cgroup is writable, so root takes
// only one the system manager marked delegated.
func judgeV2(f v2Facts, askUser func(unit string) (bool, error)) error {
	switch {
	case f.StatErr != nil:
		return f.StatErr
	case f.Type == "":
		return fmt.Errorf("%s is the root of the hierarchy, not a subtree of its own", f.Dir)
	case f.Owner != f.Euid:
		return fmt.Errorf("%s is owned by uid %d, not %d", f.Dir, f.Owner, f.Euid)
	case len(f.Unwritable) > 0:
		return fmt.Errorf("%s: %s not writable by uid %d", f.Dir, strings.Join(f.Unwritable, ", "), f.Euid)
	case f.Type != "domain":
		return fmt.Errorf("%s is a %q cgroup, not a domain one", f.Dir, f.Type)
	case !hasWords(f.Controllers, v2Controllers...):
		return fmt.Errorf("%s lacks the memory and pids controllers (it has %q)", f.Dir, f.Controllers)
	case f.Euid == 0 && !f.Marked:
		return fmt.Errorf("%s is not marked delegated (trusted.delegate), and as root ownership proves nothing", f.Dir)
	}
	unit, user := unitOf(f.Path)
	if !user || f.Marked || f.Divided {
		return nil
	}
	ok, err := askUser(unit)
	if err != nil {
		return fmt.Errorf("%s: cannot ask the user manager whether %s delegates its cgroup: %w", f.Dir, unit, err)
	}
	if !ok {
		return fmt.Errorf("%s is the cgroup of %s, which the user manager does not delegate (no Delegate=)", f.Dir, unit)
	}
	return nil
}

// setUpV2 readies the delegated subtree root for runs' cgroups: the node's processes into
// ServiceLeaf (looping until root holds none, since one may fork meanwhile), memory and pids
// enabled for root's children, then the leaves of killed launchers swept.
func setUpV2(root string) error {
	if err := cloneIntoCgroupKernel(); err != nil {
		return err
	}
	return setUpSubtree(root, v2Controllers, 5*time.Second)
}

// setUpSubtree is setUpV2 for the named controllers, giving up after patience. With none
// (a test on a host whose v2 hierarchy has neither) nothing is enabled.
func setUpSubtree(root string, controllers []string, patience time.Duration) error {
	svc := filepath.Join(root, ServiceLeaf)
	if err := os.Mkdir(svc, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("mkdir %s: %w", svc, err)
	}
	enable := "+" + strings.Join(controllers, " +")
	deadline := time.Now().Add(patience)
	for {
		n, err := moveProcs(root, svc)
		if err != nil {
			return err
		}
		if n == 0 && len(controllers) == 0 {
			break
		}
		if n == 0 {
			err := os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte(enable), 0)
			if err == nil {
				break
			}
			// EBUSY: a process arrived between the last read and the write; move it too.
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				return fmt.Errorf("write %q to %s/cgroup.subtree_control: %w", enable, root, err)
			}
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still has processes of its own after %s of moving them into %s", root, patience, ServiceLeaf)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("read back %s/cgroup.subtree_control: %w", root, err)
	}
	if len(controllers) > 0 && !hasWords(string(b), controllers...) {
		return fmt.Errorf("read back %s/cgroup.subtree_control = %q, want %s", root, strings.TrimSpace(string(b)), strings.Join(controllers, " and "))
	}
	sweepV2(root)
	return nil
}

// moveProcs moves every process in from's cgroup.procs into to and returns how many it saw
// (0: from held none). One that exited meanwhile is not an error.
func moveProcs(from, to string) (int, error) {
	b, err := os.ReadFile(filepath.Join(from, "cgroup.procs"))
	if err != nil {
		return 0, fmt.Errorf("read %s/cgroup.procs: %w", from, err)
	}
	pids := strings.Fields(string(b))
	dst := filepath.Join(to, "cgroup.procs")
	for _, pid := range pids {
		if err := os.WriteFile(dst, []byte(pid), 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return 0, fmt.Errorf("move pid %s into %s: %w", pid, to, err)
		}
	}
	return len(pids), nil
}

// makeV2Leaf makes the cgroup root/name, opens it and takes its lock. A sweeping launcher
// may remove a leaf between its mkdir and the lock (to it, an unlocked leaf is a dead
// launcher's); the leaf is then made again.
func makeV2Leaf(root, name string) (string, *os.File, error) {
	d := filepath.Join(root, name)
	for range 3 {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", nil, fmt.Errorf("cgroup mkdir %s: %w", d, err)
		}
		f, err := lockLeaf(d, unix.LOCK_EX)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			_ = os.Remove(d)
			return "", nil, err
		}
		if sameDir(f, d) {
			return d, f, nil
		}
		f.Close()
	}
	return "", nil, fmt.Errorf("cgroup %s: removed by another launcher's sweep three times over", d)
}

// lockLeaf opens the cgroup dir d and flocks it (how: LOCK_EX, maybe with LOCK_NB). The open
// file is what bwrap is cloned into; the lock lives as long as it, and dies with a killed
// launcher.
func lockLeaf(d string, how int) (*os.File, error) {
	f, err := os.OpenFile(d, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("flock %s: %w", d, err)
	}
	return f, nil
}

// sameDir reports whether the open f is still the dir at path d.
func sameDir(f *os.File, d string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat(d, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// sweepV2 removes the run leaves under root that no live launcher holds: a launcher killed
// with its runs (kill -9) leaves its leaves, and its lock died with it. Whatever still runs in
// one is killed first: a run outlives no launcher. It returns how many it removed.
func sweepV2(root string) int {
	ents, _ := os.ReadDir(root)
	n := 0
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), leafPrefix) {
			continue
		}
		d := filepath.Join(root, e.Name())
		f, err := lockLeaf(d, unix.LOCK_EX|unix.LOCK_NB)
		if err != nil {
			continue // a live launcher's run, or gone
		}
		l := &leaf{mode: LimitsV2, dirs: []string{d}, procs: []string{filepath.Join(d, "cgroup.procs")}, mem: d, pids: d, fd: f}
		l.kill()
		l.remove()
		if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
			n++
		}
	}
	return n
}

// cloneIntoCgroupKernel checks that the kernel can start a process in a given cgroup
// (clone3 with CLONE_INTO_CGROUP, Linux 5.7), which every v2 run's start needs.
func cloneIntoCgroupKernel() error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	if !kernelAtLeast(rel, 5, 7) {
		return fmt.Errorf("kernel %s cannot start a process in a given cgroup (clone3 CLONE_INTO_CGROUP needs 5.7)", rel)
	}
	return nil
}

// kernelAtLeast reports whether the release string rel ("6.1.0-18-amd64") is major.minor or
// later.
func kernelAtLeast(rel string, major, minor int) bool {
	f := strings.FieldsFunc(rel, func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
