package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

func fakeHost(t *testing.T, sysctls map[string]string, profiles string, bwrap bool) Host {
	t.Helper()
	dir := t.TempDir()
	for k, v := range sysctls {
		p := filepath.Join(dir, "sys", k)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(v+"\n"), 0o644)
	}
	pf := filepath.Join(dir, "profiles")
	os.WriteFile(pf, []byte(profiles), 0o644)
	return Host{ProcSys: filepath.Join(dir, "sys"), AppArmorProfiles: pf, LookPath: func(string) (string, error) {
		if bwrap {
			return "/bin/true", nil
		}
		return "", errors.New("not found")
	}}
}

// F2, L2: each host condition maps to its reason code and fix.
func TestHostChecks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sysctls  map[string]string
		profiles string
		bwrap    bool
		want     reasons.Code
		wantFix  string
	}{
		{"debian default", map[string]string{"user/max_user_namespaces": "96365"}, "", true, "", ""},
		{"no bwrap", nil, "", false, reasons.NoBwrap, "apt-get install bubblewrap"},
		{"debian sysctl off", map[string]string{"kernel/unprivileged_userns_clone": "0"}, "", true, reasons.UsernsUnavailable, "sysctl"},
		{"no namespaces", map[string]string{"user/max_user_namespaces": "0"}, "", true, reasons.UsernsUnavailable, "max_user_namespaces"},
		{"ubuntu 24.04 without profile", map[string]string{"kernel/apparmor_restrict_unprivileged_userns": "1"}, "bwrap (enforce)\n", true, reasons.UsernsBlocked, "apparmor_parser -r /etc/apparmor.d/anet-bwrap"},
		{"ubuntu 24.04 with profile", map[string]string{"kernel/apparmor_restrict_unprivileged_userns": "1"}, "anet-bwrap (enforce)\nanet-bwrap-unpriv (enforce)\n", true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got reasons.Code
			var fix string
			for _, c := range fakeHost(t, tc.sysctls, tc.profiles, tc.bwrap).HostChecks() {
				if !c.OK {
					if got != "" {
						t.Fatalf("more than one failure: %v and %v", got, c.Code)
					}
					got, fix = c.Code, c.Fix
				}
			}
			if got != tc.want || !strings.Contains(fix, tc.wantFix) {
				t.Fatalf("HostChecks() = %q (fix %q), want %q (fix containing %q)", got, fix, tc.want, tc.wantFix)
			}
		})
	}
}

// L2: on Ubuntu only root may read the kernel's list of profiles; as the operator, doctor reads
// the names in the policy dir instead (what the hosts rig's Ubuntu 24.04 guest showed), and a
// profile whose name merely starts with anet-bwrap does not count.
func TestUsernsCheckReadsThePolicyDir(t *testing.T) {
	restricted := map[string]string{"kernel/apparmor_restrict_unprivileged_userns": "1"}
	for _, tc := range []struct {
		name   string
		dirs   map[string]string // dir -> its name file
		want   reasons.Code
		detail string
	}{
		{"loaded", map[string]string{"1password.0": "1password", "anet-bwrap.95": "anet-bwrap", "anet-bwrap-unpriv.96": "anet-bwrap-unpriv"}, "", "is loaded"},
		{"only the unpriv half", map[string]string{"anet-bwrap-unpriv.96": "anet-bwrap-unpriv"}, reasons.UsernsBlocked, "is not loaded"},
		{"a look-alike", map[string]string{"anet-bwrap.3": "anet-bwrapper"}, reasons.UsernsBlocked, "is not loaded"},
		{"no policy dir either", nil, reasons.UsernsBlocked, "cannot be read here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fakeHost(t, restricted, "", true)
			h.AppArmorProfiles = filepath.Join(t.TempDir(), "unreadable") // as EACCES: no file to read
			h.AppArmorPolicy = filepath.Join(t.TempDir(), "profiles")
			if tc.dirs != nil {
				for d, n := range tc.dirs {
					os.MkdirAll(filepath.Join(h.AppArmorPolicy, d), 0o755)
					os.WriteFile(filepath.Join(h.AppArmorPolicy, d, "name"), []byte(n+"\n"), 0o444)
				}
			}
			c := h.usernsCheck()
			if c.Code != tc.want || c.OK != (tc.want == "") || !strings.Contains(c.Detail, tc.detail) {
				t.Fatalf("usernsCheck() = ok %v, %q (%s), want %q with %q", c.OK, c.Code, c.Detail, tc.want, tc.detail)
			}
		})
	}
}

// A2: the profile's structure: anet-bwrap on /usr/bin/bwrap with userns, children stacked
// with anet-bwrap-unpriv, which denies every capability; no sysctl is touched.
func TestAppArmorProfileStructure(t *testing.T) {
	p := AppArmorProfile
	for _, want := range []string{
		"profile anet-bwrap /usr/bin/bwrap ",
		"allow userns,",
		"allow pix /** -> &anet-bwrap//&anet-bwrap-unpriv,",
		"profile anet-bwrap-unpriv ",
		"audit deny capability,",
		"apparmor_parser -R /etc/apparmor.d/anet-bwrap",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("profile lacks %q", want)
		}
	}
	unpriv := p[strings.Index(p, "profile anet-bwrap-unpriv"):]
	if strings.Contains(unpriv, "allow capability") {
		t.Error("anet-bwrap-unpriv grants a capability")
	}
	if strings.Contains(p, "sysctl") {
		t.Error("the profile mentions a sysctl")
	}
	if strings.Count(p, "{") != strings.Count(p, "}") {
		t.Error("unbalanced braces")
	}
	if !strings.Contains(reasons.Text(reasons.UsernsBlocked), InstallCommand) {
		t.Errorf("the userns_blocked sentence does not carry the install command %q", InstallCommand)
	}
}

// S8, F2: the probe's and the node's findings join the host's in one report, each failure
// with its reason code; a probe that could not run is a failed check, not a missing one.
func TestReportChecks(t *testing.T) {
	failed := sandbox.ProbeFailed(reasons.NoBwrap, "bwrap is not on PATH")
	for _, tc := range []struct {
		name     string
		checks   []check.Check
		wantName string
		wantCode reasons.Code
	}{
		{"probe failed before its checks", ProbeChecks(&failed, nil), "probe.sandbox", reasons.NoBwrap},
		{"probe could not run", ProbeChecks(nil, errors.New("anet-sandboxd: not found")), "probe", ""},
		{"probe without an explaining check", ProbeChecks(&sandbox.ProbeResult{Code: reasons.NetnsFailed}, nil), "probe.sandbox", reasons.NetnsFailed},
		{"helper down", HelperChecks([]privsep.Status{{Name: "egress", State: privsep.StateRunning}, {Name: "sandboxd", State: privsep.StateDown, LastError: "exited"}}), "node.sandboxd", reasons.HelperDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := check.New(tc.checks...)
			var bad []check.Check
			for _, c := range r.Checks {
				if !c.OK {
					bad = append(bad, c)
				}
			}
			if r.OK || len(bad) != 1 || bad[0].Name != tc.wantName || bad[0].Code != tc.wantCode {
				t.Fatalf("checks = %+v, want one failure %s with code %q", r.Checks, tc.wantName, tc.wantCode)
			}
		})
	}
	ok := sandbox.ProbeResult{OK: true, Checks: []check.Check{check.Pass("loopback", "S7", "")}}
	if got := ProbeChecks(&ok, nil); len(got) != 1 || got[0].Name != "probe.loopback" || !got[0].OK {
		t.Fatalf("ProbeChecks(passing) = %+v, want probe.loopback ok", got)
	}
}

// M1: on macOS the host checks are Seatbelt's: sandbox-exec by its absolute path, and the
// version against the verified targets. A missing sandbox-exec is no_sandbox_exec.
func TestSeatbeltHostChecksM1(t *testing.T) {
	found := Host{LookPath: func(p string) (string, error) {
		if p != "/usr/bin/sandbox-exec" {
			t.Errorf("looked up %q, want the absolute /usr/bin/sandbox-exec", p)
		}
		return p, nil
	}}
	cs := found.seatbeltChecks("15.1")
	if len(cs) != 2 || !cs[0].OK || !cs[1].OK || !strings.Contains(cs[1].Detail, "verified target") {
		t.Fatalf("checks = %+v, want sandbox_exec and a verified macOS", cs)
	}
	if cs := found.seatbeltChecks("26.0"); !cs[1].OK || !strings.Contains(cs[1].Detail, "the verified targets are 14 and 15") {
		t.Fatalf("macOS 26 = %+v, want a pass that says it is not a verified target", cs[1])
	}
	missing := Host{LookPath: func(p string) (string, error) { return "", errors.New("not found") }}
	if cs := missing.seatbeltChecks("14.6"); cs[0].OK || cs[0].Code != reasons.NoSandboxExec {
		t.Fatalf("sandbox_exec without the program = %+v, want no_sandbox_exec", cs[0])
	}
}
