package bwrap

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestJudgeDelegation (S6): which cgroup v2 dirs are delegated to the node. Ownership proves it under
// the system manager (which chowns a unit's cgroup to its User= only for Delegate=) and for
// an administrator's cgroup; below a user manager, whose cgroups are all the user's, the
// manager is asked about the unit, so a terminal's scope (the node started by hand) is never
// divided, unless an earlier start already asked and divided it (a helper restarted in the
// service leaf); as root only a cgroup the system manager marked is taken.
func TestJudgeDelegation(t *testing.T) {
	const userUnit = "/user.slice/user-1000.slice/user@1000.service/app.slice/anetd.service"
	good := func(path string) v2Facts {
		return v2Facts{Dir: "/sys/fs/cgroup" + path, Path: path, Euid: 1000, Owner: 1000, Type: "domain", Controllers: "cpu memory pids"}
	}
	with := func(path string, edit func(*v2Facts)) v2Facts {
		f := good(path)
		edit(&f)
		return f
	}
	cases := []struct {
		name      string
		facts     v2Facts
		answer    bool
		answerErr error
		wantAsked []string
		wantErr   string // "" for delegated
	}{
		{"the user unit with Delegate=", good(userUnit), true, nil, []string{"anetd.service"}, ""},
		{"a terminal's scope under the user manager", good("/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-1.scope"), false, nil,
			[]string{"vte-spawn-1.scope"}, "vte-spawn-1.scope, which the user manager does not delegate"},
		{"the user manager cannot be asked", good(userUnit), false, errors.New("Failed to connect to bus"),
			[]string{"anetd.service"}, "cannot ask the user manager whether anetd.service delegates its cgroup: Failed to connect to bus"},
		{"the user unit, divided by an earlier start of the node: not asked again", with(userUnit, func(f *v2Facts) { f.Divided = true }), false, nil, nil, ""},
		{"the system template with User= and Delegate=", good("/system.slice/system-anetd.slice/anetd@op.service"), false, nil, nil, ""},
		{"a system unit without Delegate= (root's)", with("/system.slice/anetd@op.service", func(f *v2Facts) { f.Owner = 0 }), false, nil, nil,
			"is owned by uid 0, not 1000"},
		{"a session scope (logind's)", with("/user.slice/user-1000.slice/session-3.scope", func(f *v2Facts) { f.Owner = 0 }), false, nil, nil,
			"owned by uid 0"},
		{"an administrator's cgroup", good("/anet"), false, nil, nil, ""},
		{"the root of the hierarchy", with("/", func(f *v2Facts) { f.Type = "" }), false, nil, nil, "the root of the hierarchy"},
		{"threaded", with("/anet", func(f *v2Facts) { f.Type = "threaded" }), false, nil, nil, `a "threaded" cgroup, not a domain one`},
		{"no pids controller", with("/anet", func(f *v2Facts) { f.Controllers = "cpu memory" }), false, nil, nil,
			`lacks the memory and pids controllers (it has "cpu memory")`},
		{"subtree_control not ours", with(userUnit, func(f *v2Facts) { f.Unwritable = []string{"cgroup.subtree_control"} }), true, nil, nil,
			"cgroup.subtree_control not writable by uid 1000"},
		{"root in a session scope", with("/user.slice/user-0.slice/session-1.scope", func(f *v2Facts) { f.Euid, f.Owner = 0, 0 }), false, nil, nil,
			"not marked delegated"},
		{"root in a marked unit", with("/system.slice/anet.service", func(f *v2Facts) { f.Euid, f.Owner, f.Marked = 0, 0, true }), false, nil, nil, ""},
		{"gone", v2Facts{Dir: "/sys/fs/cgroup/x", StatErr: errors.New("no such file or directory")}, false, nil, nil, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			err := judgeV2(c.facts, func(unit string) (bool, error) {
				asked = append(asked, unit)
				return c.answer, c.answerErr
			})
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("judgeV2 = %v, want %q", err, c.wantErr)
			}
			if !slices.Equal(asked, c.wantAsked) {
				t.Errorf("asked the user manager about %q, want %q", asked, c.wantAsked)
			}
		})
	}
}

// TestUnitOf (S6): the unit a cgroup path belongs to, and whose manager runs it.
func TestUnitOf(t *testing.T) {
	for _, c := range []struct {
		path, unit string
		user       bool
	}{
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/anetd.service", "anetd.service", true},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/anetd.service/anet-service", "anetd.service", true},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-9.scope", "vte-spawn-9.scope", true},
		{"/user.slice/user-1000.slice/session-3.scope", "session-3.scope", false},
		{"/system.slice/system-anetd.slice/anetd@op.service", "anetd@op.service", false},
		{"/anet", "", false},
		{"/", "", false},
	} {
		if unit, user := unitOf(c.path); unit != c.unit || user != c.user {
			t.Errorf("unitOf(%q) = %q, %v; want %q, %v", c.path, unit, user, c.unit, c.user)
		}
	}
}

// TestKernelAtLeast (S6): a v2 run is cloned into its cgroup, which needs Linux 5.7.
func TestKernelAtLeast(t *testing.T) {
	for rel, want := range map[string]bool{
		"6.1.0-18-amd64": true, "5.7.0": true, "5.10.0-28-cloud-amd64": true, "5.6.19": false,
		"4.19.0-26-amd64": false, "6.18.44-fc-v1098": true, "": false, "garbage": false,
	} {
		if got := kernelAtLeast(rel, 5, 7); got != want {
			t.Errorf("kernelAtLeast(%q, 5, 7) = %v, want %v", rel, got, want)
		}
	}
}

// TestDelegateValue (S6): systemctl's answer for Delegate is read strictly.
func TestDelegateValue(t *testing.T) {
	for out, want := range map[string]bool{"yes\n": true, "no\n": false} {
		if got, err := delegateValue(out); err != nil || got != want {
			t.Errorf("delegateValue(%q) = %v, %v; want %v", out, got, err, want)
		}
	}
	for _, out := range []string{"", "\n", "memory pids\n", "Yes"} {
		if _, err := delegateValue(out); err == nil {
			t.Errorf("delegateValue(%q) accepted", out)
		}
	}
}
