package seatbelt

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"anet.dev/anet/pkg/sandbox"
)

// What the profile grants, read the way Seatbelt reads it: the last rule that matches an
// operation decides (M1). The reader below knows the filters this profile is written with;
// a filter it does not know never matches, so a test of an allow can only fail by it, not
// pass by it.

// decide reports whether the profile forms allow op on arg (a path, a sysctl, a service or a
// shared memory name) with the parameter values vals, for a target that holds the sandbox
// extensions in ext.
func decide(forms []*node, vals map[string]string, op, arg string, ext ...string) bool {
	allowed := false
	for _, f := range forms {
		h := f.head()
		if h != "allow" && h != "deny" {
			continue
		}
		covers := false
		for _, o := range opsOf(f) {
			covers = covers || o.text == op || o.text == "default" ||
				strings.HasSuffix(o.text, "*") && strings.HasPrefix(op, strings.TrimSuffix(o.text, "*"))
		}
		if !covers {
			continue
		}
		filters := filtersOf(f)
		match := len(filters) == 0
		for _, flt := range filters {
			match = match || matches(flt, vals, arg, ext)
		}
		if match {
			allowed = h == "allow"
		}
	}
	return allowed
}

var paramRef = regexp.MustCompile(`\$\{([A-Z_]+)\}`)

func matches(flt *node, vals map[string]string, arg string, ext []string) bool {
	if flt.head() == "require-all" {
		for _, k := range flt.kids[1:] {
			if !matches(k, vals, arg, ext) {
				return false
			}
		}
		return true
	}
	if len(flt.kids) != 2 {
		return false
	}
	var v string
	if flt.kids[1].kind == nodeRegex {
		v = flt.kids[1].text
	} else {
		s, ok := value(flt.kids[1])
		if !ok {
			return false
		}
		v = paramRef.ReplaceAllStringFunc(s, func(ref string) string { return vals[paramRef.FindStringSubmatch(ref)[1]] })
	}
	switch flt.head() {
	case "literal", "global-name", "sysctl-name", "ipc-posix-name":
		return arg == v
	case "subpath":
		return sandbox.Within(arg, v)
	case "path-ancestors":
		return sandbox.Within(v, arg)
	case "sysctl-name-prefix":
		return strings.HasPrefix(arg, v)
	case "regex", "ipc-posix-name-regex":
		return regexp.MustCompile(v).MatchString(arg)
	case "extension":
		for _, e := range ext {
			if e == v {
				return true
			}
		}
	}
	return false
}

func shippedForms(t *testing.T) []*node {
	t.Helper()
	forms, err := parse(Profile())
	if err != nil {
		t.Fatal(err)
	}
	return forms
}

// The reader itself: the last match wins, a wildcard covers its operations, a filter it does
// not know never allows.
func TestDecideReadsTheLastMatch(t *testing.T) {
	forms, err := parse(`(version 1) (deny default) (allow file-read* (subpath "/a")) (deny file-read-data (literal "/a/s"))
(allow file-write-data (prefix "/a"))`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op, arg string
		want    bool
	}{
		{"file-read-data", "/a/x", true}, {"file-read-metadata", "/a/s", true}, {"file-read-data", "/a/s", false},
		{"file-read-data", "/ab", false}, {"file-write-data", "/a/x", false}, {"process-exec", "/a/x", false},
	} {
		if got := decide(forms, nil, c.op, c.arg); got != c.want {
			t.Errorf("decide(%s %s) = %v, want %v", c.op, c.arg, got, c.want)
		}
	}
}

// grant is one question to the profile.
type grant struct {
	op, arg string
	want    bool
	ext     []string
}

func checkGrants(t *testing.T, vals map[string]string, gs []grant) {
	t.Helper()
	forms := shippedForms(t)
	for _, g := range gs {
		if got := decide(forms, vals, g.op, g.arg, g.ext...); got != g.want {
			t.Errorf("%s %s (extensions %v): allowed %v, want %v", g.op, g.arg, g.ext, got, g.want)
		}
	}
}

// M1: Homebrew's OpenSSL configuration and CA files are readable at either prefix, so that
// Homebrew's node starts and Homebrew's curl, git and python verify TLS; its key dir and the
// rest of Homebrew's etc are not.
func TestHomebrewOpenSSLM1(t *testing.T) {
	vals := testParams().Values()
	for _, prefix := range []string{"/opt/homebrew", "/usr/local"} {
		t.Run(prefix, func(t *testing.T) {
			ssl := prefix + "/etc/openssl@3"
			checkGrants(t, vals, []grant{
				{"file-read-data", ssl + "/openssl.cnf", true, nil},
				{"file-read-data", ssl + "/cert.pem", true, nil},
				// cert.pem is a link into ca-certificates: Seatbelt checks the target too.
				{"file-read-data", prefix + "/etc/ca-certificates/cert.pem", true, nil},
				{"file-read-data", ssl + "/certs/5ad8a5d6.0", true, nil},
				{"file-read-metadata", ssl + "/certs", true, nil},
				{"file-read-data", ssl + "/private", false, nil},
				{"file-read-data", ssl + "/private/server.key", false, nil},
				{"file-read-metadata", ssl + "/private/server.key", false, nil},
				{"file-read-data", ssl + "/misc/CA.pl", false, nil},
				{"file-read-data", ssl, false, nil},
				{"file-read-data", prefix + "/etc/my.cnf", false, nil},
				{"file-read-data", prefix + "/var/postgresql@16/postgresql.conf", false, nil},
				{"file-write-data", ssl + "/cert.pem", false, nil},
				{"process-exec", ssl + "/misc/CA.pl", false, nil},
			})
		})
	}
}

// M1: the active developer dir is read and run from, never written, whichever it is; the
// select link that names it is readable.
func TestDeveloperDirGrantsM1(t *testing.T) {
	for _, dev := range []string{CommandLineTools, XcodeDeveloperDir, "/Applications/Xcode-beta.app/Contents/Developer"} {
		t.Run(dev, func(t *testing.T) {
			p := testParams()
			p.DeveloperDir = dev
			checkGrants(t, p.Values(), []grant{
				{"process-exec", dev + "/usr/bin/git", true, nil},
				{"file-read-data", dev + "/usr/bin/git", true, nil},
				{"file-map-executable", dev + "/usr/lib/libLTO.dylib", true, nil},
				{"file-read-data", dev + "/SDKs/MacOSX.sdk/usr/include/stdio.h", true, nil},
				{"file-write-data", dev + "/usr/bin/git", false, nil},
				{"file-link", dev + "/usr/bin/git", false, nil},
				{"file-read-data", SelectLink, true, nil},
				{"file-write-data", SelectLink, false, nil},
				{"file-read-metadata", filepath.Dir(dev), true, nil},
				{"file-read-data", filepath.Dir(dev) + "/other-file", false, nil},
				{"process-exec", "/Applications/Other.app/Contents/MacOS/Other", false, nil},
			})
		})
	}
}

// M1: no terminal but the run's own. A terminal the run made through /dev/ptmx carries the
// pty extension; the operator's terminal does not, and neither does /dev/tty.
func TestTerminalsM1(t *testing.T) {
	const pty = "com.apple.sandbox.pty"
	var gs []grant
	for _, op := range []string{"file-read-data", "file-write-data", "file-ioctl"} {
		gs = append(gs,
			grant{op, "/dev/ttys003", false, nil},
			grant{op, "/dev/ttys003", true, []string{pty}},
			grant{op, "/dev/tty", false, nil},
			grant{op, "/dev/tty", false, []string{pty}},
			grant{op, "/dev/ttys003x", false, []string{pty}},
			grant{op, "/dev/console", false, nil},
			grant{op, "/dev/ptmx", true, nil},
		)
	}
	gs = append(gs, grant{"process-exec", "/dev/ttys003", false, []string{pty}}, grant{"pseudo-tty", "", true, nil})
	checkGrants(t, testParams().Values(), gs)
}

// M1: node's realpath lstats every component of a path, isatty and fs.fstat look at the
// standard streams by name, and a Bun-compiled program (the native claude) opens every dir
// above its working dir. Those dirs give their names, nothing below them.
func TestPathsOnTheWayM1(t *testing.T) {
	p := testParams()
	gs := []grant{
		{"file-read-metadata", "/dev/stdin", true, nil},
		{"file-read-metadata", "/dev/stdout", true, nil},
		{"file-read-metadata", "/dev/stderr", true, nil},
		{"file-read-metadata", "/dev/fd", true, nil},
		{"file-read-data", "/dev/fd/1", true, nil},
		{"file-read-metadata", "/dev/disk0", false, nil},
	}
	for d := filepath.Dir(p.Work); ; d = filepath.Dir(d) {
		gs = append(gs, grant{"file-read-data", d, true, nil}, grant{"file-read-metadata", d, true, nil})
		if d == "/" {
			break
		}
	}
	gs = append(gs,
		grant{"file-read-data", "/Users/op/notes.txt", false, nil},
		grant{"file-read-data", "/Users/op/.cache/anet/work-sandbox/aid1/int0/out.txt", false, nil},
		grant{"file-read-data", "/Users/op/.cache/anet/work-sandbox/aid2", false, nil},
		grant{"file-read-data", "/Users/other", false, nil},
		grant{"file-read-data", p.Home + "/.claude.json", true, nil},
		grant{"file-read-data", p.Tmp, true, nil},
	)
	checkGrants(t, p.Values(), gs)
}

// M1: every tree and file the profile opens can be reached by name: each dir above it has
// its metadata readable, whether the profile names it or a parameter does.
func TestEveryOpenedPathHasItsAncestorsM1(t *testing.T) {
	forms := shippedForms(t)
	// The parameters vary, so that no parameter's ancestors stand in for the profile's own
	// literals: the agent and anet-sandboxd under Homebrew, then neither.
	elsewhere := testParams()
	elsewhere.AgentTree, elsewhere.Self = neutralTree, "/Users/op/.local/bin/anet-sandboxd"
	for _, p := range []Params{testParams(), elsewhere} {
		for _, dev := range []string{CommandLineTools, XcodeDeveloperDir} {
			p.DeveloperDir = dev
			ancestorsOpen(t, forms, p.Values())
		}
	}
}

func ancestorsOpen(t *testing.T, forms []*node, vals map[string]string) {
	t.Helper()
	for _, f := range forms {
		if f.head() != "allow" {
			continue
		}
		for _, op := range opsOf(f) {
			if !fileOps[op.text] || op.text == "file-read-metadata" {
				continue
			}
			for _, flt := range filtersOf(f) {
				if (flt.head() != "literal" && flt.head() != "subpath") || len(flt.kids) != 2 {
					continue
				}
				s, _ := value(flt.kids[1])
				path := paramRef.ReplaceAllStringFunc(s, func(ref string) string { return vals[paramRef.FindStringSubmatch(ref)[1]] })
				for d := filepath.Dir(path); d != "/"; d = filepath.Dir(d) {
					if !decide(forms, vals, "file-read-metadata", d) {
						t.Errorf("(allow %s %s) opens %s, but the metadata of %s above it is shut", op.text, flt, path, d)
					}
				}
			}
		}
	}
}

// M1, S3: hard links are made of the run's own files, in its own dirs; nothing else.
func TestHardLinksM1(t *testing.T) {
	p := testParams()
	checkGrants(t, p.Values(), []grant{
		{"file-link", p.Work + "/.git/objects/ab/cd", true, nil},
		{"file-link", p.Home + "/.npm/_cacache/x", true, nil},
		{"file-link", p.Tmp + "/x", true, nil},
		{"file-link", "/Users/op/.ssh/id_ed25519", false, nil},
		{"file-link", "/Users/op/Documents/a", false, nil},
		{"file-link", "/private/tmp/x", false, nil},
		{"file-link", p.AgentTree + "/cli.js", false, nil},
		{"file-link", filepath.Dir(p.Work) + "/int0/x", false, nil},
	})
}

// M1: the closing denies still win over every grant above them.
func TestClosingDeniesWinM1(t *testing.T) {
	p := testParams()
	checkGrants(t, p.Values(), []grant{
		{"file-read-data", "/Users/op/.ssh/id_ed25519", false, nil},
		{"file-read-metadata", "/Users/op/.ssh", false, nil},
		{"file-read-data", "/Users/op/Library/Keychains/login.keychain-db", false, nil},
		{"file-read-data", "/private/etc/master.passwd", false, nil},
		{"process-exec", "/usr/bin/sudo", false, nil},
		{"process-exec", "/bin/ps", false, nil},
		{"process-exec", "/usr/bin/git", true, nil},
	})
}

// M1: the sysctls, services and shared memory names node, ps, libc and libomp ask for (the
// lists of Codex's seatbelt_base_policy.sbpl and seatbelt_platform_defaults.sbpl and of
// sandbox-runtime's macos-sandbox-utils.ts that this profile takes), and none beyond them.
func TestSystemGrantsM1(t *testing.T) {
	var gs []grant
	for _, n := range []string{
		"hw.activecpu", "hw.busfrequency_compat", "hw.byteorder", "hw.cachelinesize_compat", "hw.cpufamily",
		"hw.cpufrequency", "hw.cpufrequency_compat", "hw.cputype", "hw.l1dcachesize_compat", "hw.l1icachesize_compat",
		"hw.l2cachesize_compat", "hw.l3cachesize_compat", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine",
		"hw.memsize", "hw.model", "hw.ncpu", "hw.nperflevels", "hw.packages", "hw.pagesize", "hw.pagesize_compat",
		"hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency_compat", "hw.vectorunit", "hw.optional.arm.FEAT_SHA3",
		"hw.perflevel0.physicalcpu", "machdep.cpu.brand_string", "kern.argmax", "kern.hostname", "kern.maxfiles",
		"kern.maxfilesperproc", "kern.maxproc", "kern.osproductversion", "kern.osrelease", "kern.ostype",
		"kern.osvariant_status", "kern.osversion", "kern.secure_kernel", "kern.usrstack64", "kern.version",
		"kern.proc.pid.123", "kern.proc.pgrp.123", "sysctl.proc_cputype", "vm.loadavg", "net.routetable.0.0.3.0",
	} {
		gs = append(gs, grant{"sysctl-read", n, true, nil})
	}
	for _, n := range []string{"kern.proc.all", "kern.bootargs", "security.mac.lockdown_mode_state", "net.inet.tcp.pcblist"} {
		gs = append(gs, grant{"sysctl-read", n, false, nil})
	}
	gs = append(gs, grant{"sysctl-write", "kern.grade_cputype", false, nil})
	for _, s := range []string{
		"com.apple.system.opendirectoryd.libinfo", "com.apple.system.opendirectoryd.membership",
		"com.apple.bsd.dirhelper", "com.apple.trustd.agent", "com.apple.system.notification_center",
	} {
		gs = append(gs, grant{"mach-lookup", s, true, nil})
	}
	for _, s := range []string{"com.apple.SecurityServer", "com.apple.cfprefsd.agent", "com.apple.ocspd", "com.apple.coreservices.launchservicesd"} {
		gs = append(gs, grant{"mach-lookup", s, false, nil})
	}
	gs = append(gs,
		grant{"ipc-posix-shm-read-data", "apple.shm.notification_center", true, nil},
		grant{"ipc-posix-shm-read-metadata", "apple.shm.notification_center", true, nil},
		grant{"ipc-posix-shm-write-create", "apple.shm.notification_center", false, nil},
		grant{"ipc-posix-shm-write-unlink", "apple.shm.notification_center", false, nil},
		grant{"ipc-posix-shm-write-create", "/__KMP_REGISTERED_LIB_4242", true, nil},
		grant{"ipc-posix-shm-read-data", "/__KMP_REGISTERED_LIB_4242", true, nil},
		grant{"ipc-posix-shm-write-unlink", "/__KMP_REGISTERED_LIB_4242", true, nil},
		grant{"ipc-posix-shm-write-data", "/__KMP_REGISTERED_LIB_4242", false, nil},
		grant{"ipc-posix-shm-write-create", "/__KMP_REGISTERED_LIB_x", false, nil},
		grant{"ipc-posix-shm-read-data", "apple.cfprefs.501", false, nil},
		grant{"ipc-posix-shm-read-data", "/psm_training_buffer", false, nil},
	)
	checkGrants(t, testParams().Values(), gs)
}
