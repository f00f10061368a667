package testharness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runAsUser is the root side: create the user and resources, then run the test binary as
// that user and return its exit status.
func runAsUser(work, binDir, modRoot string, o Options) (int, error) {
	uid, gid, home, err := ensureUser(User)
	if err != nil {
		return 0, err
	}
	if err := chownTree(work, uid, gid); err != nil {
		return 0, err
	}
	// The work dir holds the binaries: readable by the test user, and by nobody else's writes.
	if err := os.Chmod(work, 0o755); err != nil {
		return 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	testBin := filepath.Join(work, "pkg.test")
	if err := copyFile(self, testBin, 0o755); err != nil {
		return 0, fmt.Errorf("copy test binary: %w", err)
	}
	// The package directory may sit under /root (0700): give the user its own copy so tests
	// can read their testdata.
	cwd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	pkgCopy := filepath.Join(work, "src")
	if err := copyTree(cwd, pkgCopy); err != nil {
		return 0, fmt.Errorf("copy package dir: %w", err)
	}
	runtimeDir := filepath.Join(work, "xdg-runtime")
	tmpDir := filepath.Join(work, "tmp")
	for _, d := range []string{runtimeDir, tmpDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return 0, err
		}
	}
	if err := chownTree(work, uid, gid); err != nil {
		return 0, err
	}

	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"USER=" + User,
		"LOGNAME=" + User,
		"LANG=C.UTF-8",
		"TMPDIR=" + tmpDir,
		"XDG_RUNTIME_DIR=" + runtimeDir,
		envChild + "=1",
		envBinDir + "=" + binDir,
		envModRoot + "=" + modRoot,
		envPkgSource + "=" + cwd,
	}
	if d := os.Getenv(envPrepared); d != "" {
		env = append(env, envPrepared+"="+d)
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "ANET_") || strings.HasPrefix(kv, "GOTRACEBACK=") || strings.HasPrefix(kv, "CI=") {
			env = append(env, kv)
		}
	}
	var cg *cgroupV1
	if o.Cgroup {
		cg, err = delegateCgroupV1(uid, gid)
		if err != nil {
			return 0, fmt.Errorf("delegate cgroup: %w", err)
		}
		defer cg.remove()
		env = append(env, envCgMemory+"="+cg.memory, envCgPids+"="+cg.pids)
	}
	var cg2 *cgroupV2
	if o.CgroupV2 {
		// Optional: a host without a writable cgroup2 hierarchy runs the other tests, and
		// the tests that need it say why they cannot run.
		if cg2, err = delegateCgroupV2(uid, gid); err != nil {
			env = append(env, envCgV2Why+"="+err.Error())
		} else {
			defer cg2.remove()
			env = append(env, envCgV2+"="+cg2.dir)
		}
	}

	// Attack tests hold thousands of connections; the test user inherits the limit, which
	// only root can raise past its hard value. (The product assumes nothing of it.)
	if err := raiseNoFile(minNoFile); err != nil {
		return 0, err
	}
	cmd := exec.Command(testBin, childArgs(os.Args[1:])...)
	cmd.Dir = pkgCopy
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	groups := supplementaryGroups(o.Groups)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups},
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start tests as %s: %w", User, err)
	}
	if cg != nil {
		if err := cg.adopt(cmd.Process.Pid); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return 0, err
		}
	}
	if cg2 != nil {
		if err := cg2.adopt(cmd.Process.Pid); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return 0, err
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, err
	}
	return 0, nil
}

// supplementaryGroups are the ids of the named groups this host has: the test user gets them
// for the test run only (the credential of the process started here), and /etc/group is not
// changed.
func supplementaryGroups(names []string) []uint32 {
	ids := []uint32{}
	for _, n := range names {
		g, err := user.LookupGroup(n)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testharness: no group %s on this host: the tests run without it\n", n)
			continue
		}
		if id, err := strconv.Atoi(g.Gid); err == nil {
			ids = append(ids, uint32(id))
		}
	}
	return ids
}

// childArgs drops flags that name files in root's private build directory.
func childArgs(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-test.testlogfile") || strings.HasPrefix(a, "-test.gocoverdir") {
			continue
		}
		out = append(out, a)
	}
	return out
}

func ensureUser(name string) (uid, gid int, home string, err error) {
	u, lerr := user.Lookup(name)
	if lerr != nil {
		out, cerr := exec.Command("useradd", "--create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if cerr != nil {
			return 0, 0, "", fmt.Errorf("useradd %s: %v: %s", name, cerr, out)
		}
		if u, lerr = user.Lookup(name); lerr != nil {
			return 0, 0, "", lerr
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, u.HomeDir, nil
}

// childSetup runs on the unprivileged side before the tests.
func childSetup(o Options) error {
	if dir := os.Getenv(envCgV2); dir != "" {
		if err := waitFor("cgroup v2 "+dir, func() bool { return inCgroupV2(dir) }); err != nil {
			return err
		}
	}
	if !o.Cgroup {
		return nil
	}
	mem := os.Getenv(envCgMemory)
	if mem == "" {
		return errors.New("no delegated cgroup was set up")
	}
	// The root side moves us into the delegated cgroup right after starting us: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if inCgroup(mem) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the test process never entered the delegated cgroup %s", mem)
}

// waitFor waits for the root side to have moved us (into what): it does so right after
// starting us.
func waitFor(what string, in func() bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if in() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the test process never entered the delegated %s", what)
}

func inCgroup(dir string) bool {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) == 3 && strings.Contains(parts[1], "memory") {
			return filepath.Join("/sys/fs/cgroup/memory", parts[2]) == dir
		}
	}
	return false
}

func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil
	})
}

// minNoFile is the descriptor limit the test user gets.
const minNoFile = 65536

// raiseNoFile raises RLIMIT_NOFILE to at least n where root may (a container may deny
// raising the hard limit: then the soft limit goes up to the hard one, and a test that needs
// more says so itself).
func raiseNoFile(n uint64) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("getrlimit NOFILE: %w", err)
	}
	if rl.Cur >= n && rl.Max >= n {
		return nil
	}
	want := syscall.Rlimit{Cur: max(rl.Cur, n), Max: max(rl.Max, n)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
		return nil
	}
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("raise RLIMIT_NOFILE to %d: %w", rl.Cur, err)
	}
	return nil
}
