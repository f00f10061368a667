package packaging

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// built is `make package` run once for all the tests of this file, into a temporary DIST.
type builtPackage struct {
	dist, deb, rpm, bin string
	err                 error
}

var (
	pkgOnce sync.Once
	pkg     builtPackage
)

// nobody is the unprivileged user that runs what a test as root must not run as root.
const nobody = 65534

// packageBuild runs `make package` once (C4) and returns what it made.
func packageBuild(t *testing.T) builtPackage {
	t.Helper()
	requireTool(t, "make", "make")
	requireTool(t, "readelf", "binutils")
	pkgOnce.Do(func() {
		dist, err := os.MkdirTemp("", "anet-dist-")
		if err != nil {
			pkg.err = err
			return
		}
		// Readable by nobody, which runs the installed programs below.
		os.Chmod(dist, 0o755)
		pkg.dist, pkg.bin = dist, filepath.Join(dist, "bin")
		cmd := exec.Command("make", "package", "DIST="+dist)
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			pkg.err = fmt.Errorf("make package: %v\n%s", err, out)
			return
		}
		debs, _ := filepath.Glob(filepath.Join(dist, "anet_*-1_amd64.deb"))
		rpms, _ := filepath.Glob(filepath.Join(dist, "anet-*-1.x86_64.rpm"))
		if len(debs) != 1 || len(rpms) != 1 {
			pkg.err = fmt.Errorf("make package made %v and %v, want one .deb and one .rpm", debs, rpms)
			return
		}
		pkg.deb, pkg.rpm = debs[0], rpms[0]
	})
	if pkg.err != nil {
		t.Fatal(pkg.err)
	}
	return pkg
}

// TestPackageBinariesHardened (C4): the package build is PIE, full RELRO, stripped and
// static, as packaging/check-elf.sh checks at make time; the developers' build (plain go
// build, fast, with symbols) is refused by the same check, which shows it sees each property.
func TestPackageBinariesHardened(t *testing.T) {
	p := packageBuild(t)
	script := filepath.Join(repoRoot(t), "packaging", "check-elf.sh")
	for _, name := range commands {
		out, err := exec.Command("sh", script, filepath.Join(p.bin, name)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "pie relro bindnow stripped static") {
			t.Errorf("check-elf.sh on the package build of %s: %v\n%s", name, err, out)
		}
	}
	out, err := exec.Command("sh", script, binary(t, "anetd")).CombinedOutput()
	if err == nil {
		t.Fatalf("check-elf.sh accepted a plain go build:\n%s", out)
	}
	for _, want := range []string{"not-pie", "no-bindnow", "not-stripped"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check-elf.sh on a plain go build = %q, want it to report %s", out, want)
		}
	}
}

// TestLintian (C4): lintian finds no error and no warning in the .deb; the overrides it
// applies are the ones shipped in the package, each with its reason, and each is used.
func TestLintian(t *testing.T) {
	lintian := requireTool(t, "lintian", "lintian")
	p := packageBuild(t)
	// --fail-on would count the overridden warnings that --show-overrides shows: the tags
	// are read from the output instead.
	cmd := exec.Command(lintian, "--show-overrides", "--fail-on", "none", p.deb)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("lintian %s:\n%s", filepath.Base(p.deb), out.String())
	var bad []string
	used := map[string]bool{}
	for _, l := range strings.Split(out.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "E: "), strings.HasPrefix(l, "W: "):
			bad = append(bad, l)
		case strings.HasPrefix(l, "O: "):
			if f := strings.Fields(l); len(f) > 2 {
				used[f[2]] = true
			}
		}
	}
	if err != nil || len(bad) > 0 {
		t.Fatalf("lintian failed (%v) with:\n%s", err, strings.Join(bad, "\n"))
	}
	overrides := parseOverrides(t, readFile(t, "packaging/lintian-overrides"))
	for _, tag := range overrides {
		if !used[tag] {
			t.Errorf("override %s in packaging/lintian-overrides is not used by lintian: remove it", tag)
		}
	}
	if len(overrides) == 0 {
		t.Fatal("no override parsed from packaging/lintian-overrides")
	}
}

// parseOverrides returns the tags of a lintian overrides file, failing on one without a
// comment line just above it.
func parseOverrides(t *testing.T, text string) []string {
	t.Helper()
	var tags []string
	prev := ""
	for _, l := range strings.Split(text, "\n") {
		if tag, ok := strings.CutPrefix(l, "anet: "); ok {
			if !strings.HasPrefix(prev, "# ") {
				t.Errorf("override %q has no reason on the line above it", l)
			}
			tags = append(tags, strings.Fields(tag)[0])
		}
		prev = l
	}
	return tags
}

// debFiles are the files of a .deb as dpkg-deb lists them, with their modes.
func debFiles(t *testing.T, deb string) map[string]string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", "-c", deb).Output()
	if err != nil {
		t.Fatalf("dpkg-deb -c: %v", err)
	}
	files := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 && strings.HasPrefix(f[0], "-") {
			files[strings.TrimPrefix(f[5], ".")] = f[0]
		}
	}
	return files
}

// TestRPM (C4): the rpm asks only for bubblewrap (the binaries are static: rpm's own
// dependency generator, elfdeps, finds no library in them), provides itself at the package
// version, holds the deb's programs, units and pages, and passes rpmlint with the filters of
// packaging/rpmlint.toml.
func TestRPM(t *testing.T) {
	rpm := requireTool(t, "rpm", "rpm")
	p := packageBuild(t)
	q := func(args ...string) []string {
		out, err := exec.Command(rpm, append([]string{"-qp"}, append(args, p.rpm)...)...).Output()
		if err != nil {
			t.Fatalf("rpm -qp %v: %v", args, err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	var requires []string
	for _, r := range q("--requires") {
		if !strings.HasPrefix(r, "rpmlib(") {
			requires = append(requires, r)
		}
	}
	if !slices.Equal(requires, []string{"bubblewrap"}) {
		t.Errorf("rpm requires %v, want [bubblewrap] (and rpmlib features)", requires)
	}
	ver := q("--qf", "%{VERSION}-%{RELEASE}")[0]
	if !slices.Contains(q("--provides"), "anet = "+ver) {
		t.Errorf("rpm provides %v, want anet = %s", q("--provides"), ver)
	}
	if lic := q("--qf", "%{LICENSE}")[0]; lic != "Apache-2.0" {
		t.Errorf("rpm licence %q, want Apache-2.0", lic)
	}
	files := q("-l")
	for dst := range debFiles(t, p.deb) {
		if strings.HasPrefix(dst, "/usr/bin/") || strings.HasPrefix(dst, "/usr/libexec/") ||
			strings.HasPrefix(dst, "/usr/lib/systemd/") || strings.HasPrefix(dst, "/usr/share/man/") {
			if !slices.Contains(files, dst) {
				t.Errorf("the deb installs %s, the rpm does not", dst)
			}
		}
	}
	elfdeps := "/usr/lib/rpm/elfdeps"
	if _, err := os.Stat(elfdeps); err != nil {
		t.Fatalf("rpm's %s is missing: apt-get install rpm", elfdeps)
	}
	for _, name := range commands {
		cmd := exec.Command(elfdeps, "-R")
		cmd.Stdin = strings.NewReader(filepath.Join(p.bin, name) + "\n")
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != "" {
			t.Errorf("elfdeps -R %s = %q, %v; want no requirement (static)", name, out, err)
		}
	}
	// The same generator does see a dynamic build's libc: the check above is not blind.
	cmd := exec.Command(elfdeps, "-R")
	cmd.Stdin = strings.NewReader(binary(t, "anetd") + "\n")
	if out, _ := cmd.Output(); os.Getenv("CGO_ENABLED") != "0" && hasCC() && !strings.Contains(string(out), "libc.so.6") {
		t.Errorf("elfdeps -R on a cgo build of anetd = %q, want libc.so.6 (is the check blind?)", out)
	}
	runRpmlint(t, p.rpm)
}

func hasCC() bool {
	_, err := exec.LookPath("gcc")
	return err == nil
}

// runRpmlint runs rpmlint on the rpm. rpmlint unpacks the payload with `rpm2cpio | cpio
// -id`, and nfpm's payload has absolute file names, which cpio would write to / itself: a
// cpio that keeps names relative comes first on PATH, and as root rpmlint runs as nobody,
// who cannot write there anyway.
func runRpmlint(t *testing.T, rpmFile string) {
	t.Helper()
	rpmlint := requireTool(t, "rpmlint", "rpmlint")
	cpio := requireTool(t, "cpio", "cpio")
	// Not t.TempDir(): its parents are root's alone, and nobody must reach these.
	wrap := publicTempDir(t)
	script := "#!/bin/sh\nexec " + cpio + " --no-absolute-filenames \"$@\"\n"
	if err := os.WriteFile(filepath.Join(wrap, "cpio"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	home := publicTempDir(t)
	os.Chmod(home, 0o777)
	cmd := exec.Command(rpmlint, "-c", filepath.Join(repoRoot(t), "packaging", "rpmlint.toml"), rpmFile)
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + wrap + ":/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8"}
	asNobody(cmd)
	out, err := cmd.CombinedOutput()
	t.Logf("rpmlint:\n%s", out)
	if err != nil || !strings.Contains(string(out), "0 errors, 0 warnings") {
		t.Fatalf("rpmlint: %v; want 0 errors, 0 warnings", err)
	}
}

// publicTempDir is a temporary directory that another user can reach.
func publicTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "anet-pkg-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o755)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// asNobody makes cmd run as nobody when the test runs as root.
func asNobody(cmd *exec.Cmd) {
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
}

// TestInstallDeb (C4): the .deb installs into a throw-away root with dpkg, every file lands
// where dpkg-deb says with its mode, the installed programs run (anetd --check, anet --help,
// the sandbox probe of the installed static anet-sandboxd, and anetd started by hand with no
// --helper-dir finding its helpers in ../libexec/anet), man renders every page, and purge
// leaves nothing of the package behind.
func TestInstallDeb(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("dpkg installs only as root: run this test as root (sudo go test ./packaging -run TestInstallDeb), as CI does")
	}
	dpkg := requireTool(t, "dpkg", "dpkg")
	requireTool(t, "bwrap", "bubblewrap")
	p := packageBuild(t)
	root, err := os.MkdirTemp("", "anet-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	admin := filepath.Join(root, "var", "lib", "dpkg")
	for _, d := range []string{filepath.Join(admin, "info"), filepath.Join(admin, "updates")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(admin, "status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := tree(t, root)
	// bubblewrap is the host's (the throw-away root has no packages); the host's dpkg
	// configuration may exclude docs and man pages, which the test checks, so everything is
	// included again; the log stays in the throw-away root.
	dpkgArgs := []string{"--root=" + root, "--log=" + filepath.Join(root, "dpkg.log"), "--force-depends", "--path-include=/*"}
	if out, err := exec.Command(dpkg, append(dpkgArgs, "-i", p.deb)...).CombinedOutput(); err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	files := debFiles(t, p.deb)
	checkLanded(t, root, "dpkg-deb -c", files)

	checkInstalled(t, root, strings.TrimSuffix(versionOf(t, p.deb), "-1"), files)

	if out, err := exec.Command(dpkg, append(dpkgArgs, "--purge", "anet")...).CombinedOutput(); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, out)
	}
	for p := range tree(t, root) {
		if !before[p] && !strings.HasPrefix(p, "var/lib/dpkg/") && p != "dpkg.log" {
			t.Errorf("left after purge: %s", p)
		}
	}
}

// checkLanded checks that every file the package lists (lister says how it was listed) is
// under root with its mode, and that the list is not suspiciously short.
func checkLanded(t *testing.T, root, lister string, files map[string]string) {
	t.Helper()
	if len(files) < 15 {
		t.Fatalf("%s listed %d files: %v", lister, len(files), files)
	}
	for dst, mode := range files {
		fi, err := os.Stat(filepath.Join(root, dst))
		if err != nil {
			t.Errorf("installed file %s: %v", dst, err)
			continue
		}
		if fi.Mode().String() != mode {
			t.Errorf("installed %s mode %s, want %s", dst, fi.Mode(), mode)
		}
	}
}

// checkInstalled runs the installed programs under root as an operator would (anetd --check,
// anet --help and --version, the sandbox probe of the installed static anet-sandboxd, every
// man page, and anetd started by hand finding its helpers) for a package of version.
func checkInstalled(t *testing.T, root, version string, files map[string]string) {
	t.Helper()
	man := requireTool(t, "man", "man-db")
	env := installedEnv(t)
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, name), args...)
		cmd.Env = env
		asNobody(cmd)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("installed %s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	if out := run("usr/bin/anetd", "--check"); !strings.Contains(out, "is valid") {
		t.Errorf("anetd --check = %q", out)
	}
	if out := run("usr/bin/anet", "--help"); !strings.Contains(out, "doctor") {
		t.Errorf("anet --help = %q, want the command list", out)
	}
	if out := run("usr/bin/anet", "--version"); !strings.Contains(out, version) {
		t.Errorf("anet --version = %q, want the package version %s", out, version)
	}
	var probe struct {
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	}
	if out := run("usr/libexec/anet/anet-sandboxd", "probe", "--json"); json.Unmarshal([]byte(out), &probe) != nil || !probe.OK {
		t.Errorf("installed anet-sandboxd probe = %s, want ok", out)
	}
	for dst := range files {
		if strings.HasPrefix(dst, "/usr/share/man/") {
			cmd := exec.Command(man, "-l", filepath.Join(root, dst))
			cmd.Env = append(env, "MANPAGER=cat", "MANWIDTH=80", "MAN_KEEP_STDERR=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 || stdout.Len() < 500 {
				t.Errorf("man -l %s: %v, %d bytes, stderr %q", dst, err, stdout.Len(), stderr.String())
			}
		}
	}
	startInstalledAnetd(t, root, env)
}

// TestInstallRPM (C4): the .rpm installs with rpm into a throw-away root (its own rpm
// database; bubblewrap, its one requirement, is the host's), every file lands where
// `rpm -qlv` says with its mode, `rpm -V` finds nothing changed, the installed programs run as
// in TestInstallDeb, and `rpm -e` leaves nothing of the package behind. The package has no
// scriptlets, so nothing is run inside the root.
func TestInstallRPM(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("rpm installs into another root only as root: run this test as root (sudo go test ./packaging -run TestInstallRPM), as CI does")
	}
	rpm := requireTool(t, "rpm", "rpm")
	requireTool(t, "bwrap", "bubblewrap")
	p := packageBuild(t)
	root, err := os.MkdirTemp("", "anet-rpmroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	db := filepath.Join(root, "var", "lib", "rpm")
	rpmArgs := func(args ...string) []string {
		return append([]string{"--root", root, "--dbpath", "/var/lib/rpm"}, args...)
	}
	if out, err := exec.Command(rpm, rpmArgs("--initdb")...).CombinedOutput(); err != nil {
		t.Fatalf("rpm --initdb: %v\n%s", err, out)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("rpm --initdb made no database in the root: %v", err)
	}
	before := tree(t, root)
	if out, err := exec.Command(rpm, rpmArgs("-i", "--nodeps", p.rpm)...).CombinedOutput(); err != nil {
		t.Fatalf("rpm -i: %v\n%s", err, out)
	}
	files := rpmFiles(t, rpm, p.rpm)
	checkLanded(t, root, "rpm -qlvp", files)
	if out, err := exec.Command(rpm, rpmArgs("-V", "--nodeps", "anet")...).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("rpm -V anet: %v\n%s", err, out)
	}
	ver, err := exec.Command(rpm, "-qp", "--queryformat", "%{VERSION}", p.rpm).Output()
	if err != nil {
		t.Fatalf("rpm -qp VERSION: %v", err)
	}
	checkInstalled(t, root, string(ver), files)

	if out, err := exec.Command(rpm, rpmArgs("-e", "anet")...).CombinedOutput(); err != nil {
		t.Fatalf("rpm -e: %v\n%s", err, out)
	}
	// What may stay are the directories that, on a real system, the distribution's own
	// packages own (/usr/bin, the man and completion dirs, …); nothing named for this package.
	for p := range tree(t, root) {
		if before[p] || strings.HasPrefix(p, "var/lib/rpm") {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(root, p)); err != nil || !fi.IsDir() || strings.Contains(filepath.Base(p), "anet") {
			t.Errorf("left after rpm -e: %s", p)
		}
	}
}

// rpmFiles is what the .rpm installs: regular files and their modes, as `rpm -qlv` shows them.
func rpmFiles(t *testing.T, rpm, file string) map[string]string {
	t.Helper()
	out, err := exec.Command(rpm, "-qlvp", file).Output()
	if err != nil {
		t.Fatalf("rpm -qlvp: %v", err)
	}
	files := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) >= 9 && strings.HasPrefix(f[0], "-") {
			files[f[len(f)-1]] = f[0]
		}
	}
	return files
}

// versionOf is the Version field of a .deb.
func versionOf(t *testing.T, deb string) string {
	out, err := exec.Command("dpkg-deb", "-f", deb, "Version").Output()
	if err != nil {
		t.Fatalf("dpkg-deb -f Version: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// tree lists every path under root, relative.
func tree(t *testing.T, root string) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != root {
			rel, _ := filepath.Rel(root, p)
			m[rel] = true
		}
		return err
	})
	return m
}

// installedEnv is a user's environment with its own XDG tree, owned by the user the
// installed programs run as.
func installedEnv(t *testing.T) []string {
	t.Helper()
	// Short: the control socket's path must fit a unix socket address.
	base, err := os.MkdirTemp("", "ai")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"} {
		d := filepath.Join(base, strings.ToLower(k))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			os.Chown(d, nobody, nobody)
		}
		env = append(env, k+"="+d)
	}
	os.Chmod(base, 0o755)
	return env
}

// startInstalledAnetd starts the installed anetd by hand, without --helper-dir, as the
// CLI's hint says, and waits until the installed anet reports both helpers running.
func startInstalledAnetd(t *testing.T, root string, env []string) {
	t.Helper()
	var logs testkit.Buffer
	cmd := exec.Command(filepath.Join(root, "usr/bin/anetd"))
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &logs, &logs
	// A helper that outlives anetd must not keep Wait on the output pipe.
	cmd.WaitDelay = 5 * time.Second
	asNobody(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// done is closed when anetd has exited, with its error in waitErr.
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st := exec.CommandContext(ctx, filepath.Join(root, "usr/bin/anet"), "status", "--json")
		st.Env = env
		asNobody(st)
		out, err := st.Output()
		cancel()
		var s struct {
			Helpers []struct{ Name, State string }
		}
		if err == nil && json.Unmarshal(out, &s) == nil && len(s.Helpers) == 2 &&
			s.Helpers[0].State == "running" && s.Helpers[1].State == "running" {
			return
		}
		select {
		case <-done:
			t.Fatalf("installed anetd exited: %v\n%s", waitErr, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("installed anetd: helpers not running after 60s: %s\n%s", out, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
