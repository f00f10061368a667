package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// units are the packaged systemd units: repository path, whether it is a user unit.
var units = []struct {
	name, src string
	user      bool
}{
	{"user", "packaging/systemd/user/anetd.service", true},
	{"system-template", "packaging/systemd/system/anetd@.service", false},
}

const (
	anetdPath = "/usr/bin/anetd"
	helperDir = "/usr/libexec/anet"
)

// stageMan puts the packaged man pages in a man tree, so that systemd-analyze checks the
// units' Documentation= against the pages the package ships.
func stageMan(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, page := range []string{"anet.1", "anetd.8", "anet-sandboxd.8", "anet-egress.8"} {
		sec := filepath.Join(dir, "man"+page[len(page)-1:])
		if err := os.MkdirAll(sec, 0o755); err != nil {
			t.Fatal(err)
		}
		b := []byte(readFile(t, "packaging/man/"+page))
		if err := os.WriteFile(filepath.Join(sec, page), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// verifyUnit runs systemd-analyze verify on unit text with /usr/bin/anetd replaced by a
// freshly built anetd (verify checks that the program exists and is executable). Any
// message counts as a failure: systemd-analyze exits 0 on unknown keys and bad values,
// which it only reports.
func verifyUnit(t *testing.T, fileName, text string, user bool, manDir string) string {
	t.Helper()
	sa := requireTool(t, "systemd-analyze", "systemd")
	if !strings.Contains(text, anetdPath+" ") {
		t.Fatalf("unit %s does not start %s", fileName, anetdPath)
	}
	text = strings.ReplaceAll(text, anetdPath+" ", binary(t, "anetd")+" ")
	dir := t.TempDir()
	p := filepath.Join(dir, fileName)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"verify", p}
	if user {
		args = []string{"--user", "verify", p}
	}
	cmd := exec.Command(sa, args...)
	// --user needs a runtime directory to set up its manager; the check starts nothing.
	runtimeDir := t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtimeDir, "MANPATH="+manDir, "SYSTEMD_LOG_COLOR=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	msg := strings.TrimSpace(out.String())
	if err != nil && msg == "" {
		msg = err.Error()
	}
	return msg
}

// TestUnitsVerify (C4): both units pass systemd-analyze verify with no message, including
// their man: documentation links. A broken copy of each must not pass, which shows the
// check sees what it claims to.
func TestUnitsVerify(t *testing.T) {
	man := stageMan(t)
	for _, u := range units {
		text := readFile(t, u.src)
		name := filepath.Base(u.src)
		t.Run(u.name, func(t *testing.T) {
			if msg := verifyUnit(t, name, text, u.user, man); msg != "" {
				t.Fatalf("systemd-analyze verify %s = %q, want no message", u.src, msg)
			}
		})
		t.Run(u.name+"/unknown-key-is-caught", func(t *testing.T) {
			broken := strings.Replace(text, "[Service]\n", "[Service]\nNoSuchSetting=1\n", 1)
			if msg := verifyUnit(t, name, broken, u.user, man); !strings.Contains(msg, "NoSuchSetting") {
				t.Fatalf("systemd-analyze verify of a unit with an unknown key = %q, want a message naming it", msg)
			}
		})
		t.Run(u.name+"/missing-man-page-is-caught", func(t *testing.T) {
			broken := strings.Replace(text, "Documentation=", "Documentation=man:anet-nosuchpage(8) ", 1)
			if msg := verifyUnit(t, name, broken, u.user, man); !strings.Contains(msg, "anet-nosuchpage") {
				t.Fatalf("systemd-analyze verify of a unit naming a missing man page = %q, want a message naming it", msg)
			}
		})
	}
}

// unitFile is a parsed unit: section -> key -> values in order (a key may repeat).
type unitFile map[string]map[string][]string

// parseUnit is a strict parser of the unit syntax these files use: comments, sections,
// key=value, no continuation lines.
func parseUnit(t *testing.T, name, text string) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if u[section] != nil {
				t.Fatalf("%s:%d: section [%s] twice", name, i+1, section)
			}
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.HasSuffix(line, `\`) {
				t.Fatalf("%s:%d: %q is not key=value inside a section", name, i+1, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

func (u unitFile) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// TestUnitSettings: the settings the node depends on, in both units. Type=notify because
// anetd sends READY=1; ExecStart passes --helper-dir because the package puts the helpers in
// libexec; Delegate gives runs their cgroups (S6); nothing that blocks bwrap's user
// namespaces, its hostname or its /proc mount is set (L1, S1).
func TestUnitSettings(t *testing.T) {
	wantExec := anetdPath + " --helper-dir " + helperDir
	forbidden := []string{
		"RestrictNamespaces", "ProtectHostname", // block bwrap's unshare and sethostname (hardening_test.go)
		"PrivateUsers",                                                            // works, but runs would differ from what anet doctor probes
		"ProtectKernelTunables", "ProtectKernelLogs", "ProtectProc", "ProcSubset", // cover /proc: bwrap cannot mount a new one
		"MemoryDenyWriteExecute", // the agents' JIT
		"ProtectControlGroups",   // read-only cgroupfs: no delegated run cgroups
		"User", "DynamicUser",    // checked per unit below
	}
	for _, u := range units {
		t.Run(u.name, func(t *testing.T) {
			f := parseUnit(t, u.src, readFile(t, u.src))
			for _, c := range []struct{ section, key, want string }{
				{"Service", "Type", "notify"},
				{"Service", "NotifyAccess", "main"},
				{"Service", "ExecStart", wantExec},
				{"Service", "Restart", "on-failure"},
				{"Service", "KillMode", "mixed"},
				{"Service", "NoNewPrivileges", "yes"},
				{"Service", "UMask", "0077"},
			} {
				if got := f.get(c.section, c.key); got != c.want {
					t.Errorf("%s [%s] %s = %q, want %q", u.src, c.section, c.key, got, c.want)
				}
			}
			if got := strings.Fields(f.get("Service", "Delegate")); !slices.Contains(got, "memory") || !slices.Contains(got, "pids") {
				t.Errorf("%s Delegate = %v, want memory and pids (S6)", u.src, got)
			}
			for _, k := range forbidden {
				if k == "User" && !u.user {
					continue
				}
				if v, ok := f["Service"][k]; ok {
					t.Errorf("%s sets %s=%v; it must not (see the unit's comments)", u.src, k, v)
				}
			}
			if u.user {
				if got := f.get("Install", "WantedBy"); got != "default.target" {
					t.Errorf("%s WantedBy = %q, want default.target", u.src, got)
				}
				return
			}
			// The system template runs as the instance's user, never root, with its runtime
			// directory where XDG_RUNTIME_DIR points.
			if got := f.get("Service", "User"); got != "%i" {
				t.Errorf("%s User = %q, want %%i", u.src, got)
			}
			env := strings.Join(f["Service"]["Environment"], " ")
			rd := f.get("Service", "RuntimeDirectory")
			if rd == "" || !strings.Contains(env, "XDG_RUNTIME_DIR=/run/"+rd) {
				t.Errorf("%s RuntimeDirectory = %q, Environment = %q, want XDG_RUNTIME_DIR=/run/<RuntimeDirectory>", u.src, rd, env)
			}
			if got := f.get("Service", "RuntimeDirectoryMode"); got != "0700" {
				t.Errorf("%s RuntimeDirectoryMode = %q, want 0700", u.src, got)
			}
			if got := f.get("Install", "WantedBy"); got != "multi-user.target" {
				t.Errorf("%s WantedBy = %q, want multi-user.target", u.src, got)
			}
		})
	}
}

// TestUnitsMatchPackage: the programs the units start are where nfpm.yaml installs them,
// and both helpers are in the --helper-dir the units pass.
func TestUnitsMatchPackage(t *testing.T) {
	c := loadNfpm(t)
	for _, packager := range []string{"deb", "rpm"} {
		dsts := c.dstsFor(packager)
		for _, p := range []string{anetdPath, helperDir + "/anet-sandboxd", helperDir + "/anet-egress"} {
			if e, ok := dsts[p]; !ok || !strings.HasPrefix(e.Src, "${PKGBIN}/") {
				t.Errorf("%s package: %s is not installed from the package build (got %+v)", packager, p, e)
			}
		}
	}
}
