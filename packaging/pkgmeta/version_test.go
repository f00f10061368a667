package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestVersion (C4): what each kind of tree becomes.
func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		tree Tree
		want string // "" means an error
	}{
		{"tag", Tree{Describe: "v1.2.3-0-gabcdef012345"}, "1.2.3"},
		{"after tag", Tree{Describe: "v1.2.3-4-gabcdef012345"}, "1.2.3+git4.abcdef012345"},
		{"after tag, hash of digits", Tree{Describe: "v1.2.3-12-g938829712345"}, "1.2.3+git12.938829712345"},
		{"tag, dirty", Tree{Describe: "v1.2.3-0-gabcdef012345", Dirty: true}, "1.2.3+git0.abcdef012345.dirty"},
		{"pre-release tag", Tree{Describe: "v1.3.0-rc.1-0-gabcdef012345"}, "1.3.0~rc.1"},
		{"after pre-release tag", Tree{Describe: "v1.3.0-rc.1-2-gabcdef012345"}, "1.3.0~rc.1+git2.abcdef012345"},
		{"untagged, hash of digits", Tree{Commits: 36, Hash: "938829712345"}, "0.0.0~git36.938829712345"},
		{"untagged, hash of letters", Tree{Commits: 36, Hash: "abcdef012345"}, "0.0.0~git36.abcdef012345"},
		{"untagged, dirty", Tree{Commits: 36, Hash: "abcdef012345", Dirty: true}, "0.0.0~git36.abcdef012345.dirty"},
		{"tag without patch level", Tree{Describe: "v1.2-0-gabcdef012345"}, ""},
		{"tag with a leading zero", Tree{Describe: "v01.2.3-0-gabcdef012345"}, ""},
		{"numeric pre-release", Tree{Describe: "v1.2.3-4-5-gabcdef012345"}, ""},
		{"no tag, no hash", Tree{Commits: 3}, ""},
		{"no tag, no commits", Tree{Hash: "abcdef012345"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Version(tc.tree)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("Version(%+v) = %q, want an error", tc.tree, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Version(%+v) = %q, %v; want %q", tc.tree, got, err, tc.want)
			}
		})
	}
}

// ordered are package versions from oldest to newest, each made by Version from a tree, with
// the two values the old mapping gave (an untagged tree whose hash starts with a digit
// became 9388297.0.0 and outranked every release; v1.2.3-4-gX became a pre-release of 1.2.3).
var ordered = []Tree{
	{Commits: 9, Hash: "938829712345"},
	{Commits: 36, Hash: "abcdef012345"},
	{Commits: 36, Hash: "abcdef012345", Dirty: true},
	{Commits: 100, Hash: "0123456789ab"},
	{Describe: "v0.1.0-0-g0123456789ab"},
	{Describe: "v0.1.0-3-g0123456789ab"},
	{Describe: "v0.1.0-10-gabcdef012345"},
	{Describe: "v1.0.0-rc.1-0-g0123456789ab"},
	{Describe: "v1.0.0-rc.1-5-g0123456789ab"},
	{Describe: "v1.0.0-rc.2-0-g0123456789ab"},
	{Describe: "v1.0.0-0-g0123456789ab"},
	{Describe: "v1.0.0-1-g9999999999ab"},
	{Describe: "v1.0.0-2-gabcdef012345"},
	{Describe: "v1.0.1-0-g0123456789ab"},
	{Describe: "v1.10.0-0-g0123456789ab"},
	{Describe: "v2.0.0-0-g0123456789ab"},
}

// TestVersionsSort (C4): dpkg and rpm, the tools that decide upgrades, order the versions of
// `ordered` as listed: every pair, both ways. The revision "-1" that the packages carry is
// added, as dpkg and rpm see it.
func TestVersionsSort(t *testing.T) {
	dpkg, err := exec.LookPath("dpkg")
	if err != nil {
		t.Fatal("dpkg is needed to check the version order: apt-get install dpkg")
	}
	rpm, err := exec.LookPath("rpm")
	if err != nil {
		t.Fatal("rpm is needed to check the version order: apt-get install rpm")
	}
	var vs []string
	for _, tr := range ordered {
		v, err := Version(tr)
		if err != nil {
			t.Fatalf("Version(%+v): %v", tr, err)
		}
		vs = append(vs, v)
	}
	t.Logf("order: %s", strings.Join(vs, " < "))
	// rpm compares all pairs in one run of its Lua interpreter: rpm.vercmp is the same
	// comparison rpm -U uses.
	var lua strings.Builder
	for i := range vs {
		for j := range vs {
			fmt.Fprintf(&lua, "print(rpm.vercmp(%q, %q) .. \" \") ", vs[i], vs[j])
		}
	}
	out, err := exec.Command(rpm, "--eval", "%{lua: "+lua.String()+"}").Output()
	if err != nil {
		t.Fatalf("rpm --eval lua: %v", err)
	}
	rpmRes := strings.Fields(string(out))
	if len(rpmRes) != len(vs)*len(vs) {
		t.Fatalf("rpm gave %d results, want %d: %q", len(rpmRes), len(vs)*len(vs), out)
	}
	for i := range vs {
		for j := range vs {
			want := map[bool]string{true: "-1", false: "1"}[i < j]
			if i == j {
				want = "0"
			}
			if got := rpmRes[i*len(vs)+j]; got != want {
				t.Errorf("rpm.vercmp(%s, %s) = %s, want %s", vs[i], vs[j], got, want)
			}
			if i == j {
				continue
			}
			op := map[bool]string{true: "lt", false: "gt"}[i < j]
			a, b := vs[i]+"-1", vs[j]+"-1"
			if err := exec.Command(dpkg, "--compare-versions", a, op, b).Run(); err != nil {
				t.Errorf("dpkg --compare-versions %s %s %s: false (%v)", a, op, b, err)
			}
		}
	}
	for _, v := range vs {
		if out, err := exec.Command(dpkg, "--validate-version", v+"-1").CombinedOutput(); err != nil {
			t.Errorf("dpkg --validate-version %s-1: %v %s", v, err, out)
		}
	}
}

// TestOldMappingWasWrong shows the check above can fail: the version the old Makefile gave an
// untagged tree (9388297.0.0 from nfpm's semver parsing of a hash) sorts above 1.0.0 in both
// tools, which is what the new mapping prevents.
func TestOldMappingWasWrong(t *testing.T) {
	if err := exec.Command("dpkg", "--compare-versions", "9388297.0.0-1", "gt", "1.0.0-1").Run(); err != nil {
		t.Fatalf("dpkg no longer ranks 9388297.0.0 above 1.0.0: %v", err)
	}
	out, err := exec.Command("rpm", "--eval", `%{lua: print(rpm.vercmp("9388297.0.0", "1.0.0"))}`).Output()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("rpm.vercmp(9388297.0.0, 1.0.0) = %q, %v; want 1", out, err)
	}
}
