package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
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
