package bwrap

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// This host's layout (hybrid v1, as on the CI machine).
const hybridCgroup = `9:name=systemd:/
8:pids:/anet-test-1
4:memory:/anet-test-1
2:cpu,cpuacct:/
0::/
`

const hybridMountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const v2Unit = "/user.slice/user-1000.slice/user@1000.service/app.slice/anetd.service"
const v2Mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"

// fakeLimitsHost answers the choice's questions from fixed verdicts and records them.
type fakeLimitsHost struct {
	v2, setUp, v1 error
	systemdOK     bool
	systemdWhy    string
	asked         []string // "v2 DIR PATH", "setup DIR", "systemd", "v1 DIR"
}

func (f *fakeLimitsHost) host() limitsHost {
	return limitsHost{
		delegatedV2: func(dir, path string, inLeaf bool) error {
			f.asked = append(f.asked, fmt.Sprintf("v2 %s %s %v", dir, path, inLeaf))
			return f.v2
		},
		setUpV2: func(dir string) error { f.asked = append(f.asked, "setup "+dir); return f.setUp },
		systemd: func() (bool, string, []string) {
			f.asked = append(f.asked, "systemd")
			return f.systemdOK, f.systemdWhy, []string{"XDG_RUNTIME_DIR=/run/user/1000"}
		},
		delegatedV1: func(dir string) error { f.asked = append(f.asked, "v1 "+dir); return f.v1 },
	}
}

// TestDecideLimits (S6, F2): the order of preference, from /proc texts and the host's
// verdicts: a delegated v2 subtree (set up once) before a systemd scope per run, before
// delegated v1, before none; each fallback says why the better mechanisms were not taken.
func TestDecideLimits(t *testing.T) {
	unit := "/sys/fs/cgroup" + v2Unit
	notDelegated := errors.New(unit + " is the cgroup of anetd.service, which the user manager does not delegate (no Delegate=)")
	cases := []struct {
		name      string
		cg, mi    string
		host      fakeLimitsHost
		wantMode  LimitsMode
		wantDirs  [3]string // V2, Memory, Pids
		wantAsked []string
		wantInWhy []string
	}{
		{"the packaged unit: v2 delegated, no systemd asked", "0::" + v2Unit + "\n", v2Mountinfo,
			fakeLimitsHost{}, LimitsV2, [3]string{unit, "", ""},
			[]string{"v2 " + unit + " " + v2Unit + " false", "setup " + unit},
			[]string{"delegated cgroup v2 subtree " + unit, ServiceLeaf}},
		{"a helper restarted in the service leaf: the subtree is its parent", "0::" + v2Unit + "/" + ServiceLeaf + "\n", v2Mountinfo,
			fakeLimitsHost{}, LimitsV2, [3]string{unit, "", ""},
			[]string{"v2 " + unit + " " + v2Unit + " true", "setup " + unit}, nil},
		{"started by hand: not delegated, a systemd scope", "0::" + v2Unit + "\n", v2Mountinfo,
			fakeLimitsHost{v2: notDelegated, systemdOK: true, systemdWhy: "user systemd (/usr/bin/systemd-run, running)"}, LimitsSystemd, [3]string{},
			[]string{"v2 " + unit + " " + v2Unit + " false", "systemd"},
			[]string{"user systemd (/usr/bin/systemd-run, running)", "cgroup v2 not delegated: " + notDelegated.Error()}},
		{"delegated but the set-up fails: a systemd scope", "0::" + v2Unit + "\n", v2Mountinfo,
			fakeLimitsHost{setUp: errors.New("write \"+memory +pids\" to cgroup.subtree_control: device or resource busy"), systemdOK: true, systemdWhy: "user systemd"}, LimitsSystemd, [3]string{},
			[]string{"v2 " + unit + " " + v2Unit + " false", "setup " + unit, "systemd"},
			[]string{"cgroup v2 " + unit + " is delegated but could not be set up: write", "device or resource busy"}},
		{"delegated but the set-up fails, no user manager: none", "0::" + v2Unit + "\n", v2Mountinfo,
			fakeLimitsHost{setUp: errors.New("busy"), systemdWhy: "XDG_RUNTIME_DIR is not set"}, LimitsNone, [3]string{},
			[]string{"v2 " + unit + " " + v2Unit + " false", "setup " + unit, "systemd"},
			[]string{"could not be set up: busy", "no systemd user scope: XDG_RUNTIME_DIR is not set"}},
		{"this host: hybrid, v1 delegated", hybridCgroup, hybridMountinfo,
			fakeLimitsHost{v2: errors.New("/sys/fs/cgroup/unified is the root of the hierarchy, not a subtree of its own"), systemdWhy: "no user manager socket in /tmp/rt"}, LimitsV1,
			[3]string{"", "/sys/fs/cgroup/memory/anet-test-1", "/sys/fs/cgroup/pids/anet-test-1"},
			[]string{"v2 /sys/fs/cgroup/unified / false", "systemd", "v1 /sys/fs/cgroup/memory/anet-test-1", "v1 /sys/fs/cgroup/pids/anet-test-1"},
			[]string{"delegated cgroup v1 /sys/fs/cgroup/memory/anet-test-1 and /sys/fs/cgroup/pids/anet-test-1", "root of the hierarchy", "no user manager socket"}},
		{"hybrid, nothing delegated: none, every reason", hybridCgroup, hybridMountinfo,
			fakeLimitsHost{v2: errors.New("root of the hierarchy"), v1: errors.New("owned by uid 0"), systemdWhy: `user manager state "offline"`}, LimitsNone, [3]string{},
			[]string{"v2 /sys/fs/cgroup/unified / false", "systemd", "v1 /sys/fs/cgroup/memory/anet-test-1", "v1 /sys/fs/cgroup/pids/anet-test-1"},
			[]string{"cgroup v2 not delegated: root of the hierarchy", `no systemd user scope: user manager state "offline"`, "cgroup v1 not delegated: owned by uid 0"}},
		{"nothing mounted", hybridCgroup, "", fakeLimitsHost{systemdWhy: "XDG_RUNTIME_DIR is not set"}, LimitsNone, [3]string{},
			[]string{"systemd"}, []string{"no memory and pids cgroup controllers found"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.host
			m := decideLimits(c.cg, c.mi, h.host())
			if m.Mode != c.wantMode || [3]string{m.V2, m.Memory, m.Pids} != c.wantDirs {
				t.Errorf("decideLimits = %+v, want mode %s dirs %q", m, c.wantMode, c.wantDirs)
			}
			if !slices.Equal(h.asked, c.wantAsked) {
				t.Errorf("asked the host %q, want %q", h.asked, c.wantAsked)
			}
			for _, w := range c.wantInWhy {
				if !strings.Contains(m.Detail, w) {
					t.Errorf("detail %q lacks %q", m.Detail, w)
				}
			}
			if (m.Mode == LimitsSystemd) != (len(m.busEnv) > 0) {
				t.Errorf("busEnv = %q for mode %s: systemd-run needs it, nothing else gets it", m.busEnv, m.Mode)
			}
		})
	}
}

// TestSystemdScopeArgs: the user-systemd path cannot run on this host (no user manager), so
// its transient scope is pinned here (S6: 2 GiB, 256 tasks by default).
func TestSystemdScopeArgs(t *testing.T) {
	cases := []struct {
		name string
		lim  sandbox.Limits
		want string
	}{
		{"defaults", sandbox.Limits{}, "/usr/bin/systemd-run --user --scope --quiet --collect --unit=anet-run-r1.scope --description=anet sandboxed run r1 -p MemoryMax=2147483648 -p MemorySwapMax=0 -p TasksMax=256 -p OOMPolicy=continue -- enter x"},
		{"small", sandbox.Limits{Memory: 64 << 20, Tasks: 16, WallClock: time.Minute}, "/usr/bin/systemd-run --user --scope --quiet --collect --unit=anet-run-r1.scope --description=anet sandboxed run r1 -p MemoryMax=67108864 -p MemorySwapMax=0 -p TasksMax=16 -p OOMPolicy=continue -- enter x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(SystemdScopeArgs("/usr/bin/systemd-run", "r1", c.lim, []string{"enter", "x"}), " ")
			if got != c.want {
				t.Fatalf("SystemdScopeArgs = %q, want %q", got, c.want)
			}
		})
	}
}

// TestClassifyStart maps bwrap's own messages to F2's codes, and to L2's userns_blocked where
// AppArmor restricts user namespaces: the first message is what bwrap 0.9 printed on Ubuntu
// 24.04 as installed, with no anet-bwrap profile (the hosts rig's Ubuntu guest).
func TestClassifyStart(t *testing.T) {
	cases := []struct {
		msg        string
		restricted bool
		want       reasons.Code
	}{
		{"bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted", true, reasons.UsernsBlocked},
		{"bwrap: setting up uid map: Permission denied", true, reasons.UsernsBlocked},
		{"bwrap: setting up uid map: Permission denied", false, reasons.UsernsUnavailable},
		{"bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.", false, reasons.UsernsUnavailable},
		{"bwrap: Creating new namespace failed: No space left on device (max_user_namespaces exceeded)", false, reasons.UsernsUnavailable},
		{"bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted", false, reasons.NetnsFailed},
		{"bwrap: seccomp: invalid argument", false, reasons.SeccompFailed},
		{"bwrap: seccomp: invalid argument", true, reasons.SeccompFailed},
		{"bwrap: Can't find source path /nonexistent: No such file or directory", false, reasons.SandboxStartFailed},
		{"bwrap: Can't find source path /nonexistent: No such file or directory", true, reasons.SandboxStartFailed},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s restricted=%v", c.want, c.restricted), func(t *testing.T) {
			if got := classifyStart(c.msg, c.restricted); got != c.want {
				t.Fatalf("classifyStart(%q, %v) = %s, want %s", c.msg, c.restricted, got, c.want)
			}
		})
	}
}

// FuzzDecideLimits (S6): whatever /proc texts come in, the choice never panics, every dir it
// returns lies inside a cgroup mount point the mountinfo names, and a subtree is used only
// when it was judged delegated and then set up.
func FuzzDecideLimits(f *testing.F) {
	f.Add(hybridCgroup, hybridMountinfo, true, true)
	f.Add("0::"+v2Unit+"\n", v2Mountinfo, true, true)
	f.Add("0::"+v2Unit+"/"+ServiceLeaf+"\n", v2Mountinfo, true, false)
	f.Add("0::/../../etc\n", v2Mountinfo, true, true)
	f.Add("4:memory:/a\n8:pids:/b\n", "35 31 0:32 /a /m rw - cgroup cgroup rw,memory\n39 31 0:36 / /p rw - cgroup cgroup rw,pids\n", false, false)
	f.Fuzz(func(t *testing.T, cg, mi string, v2ok, setupOK bool) {
		var judged, setUp []string
		h := limitsHost{
			delegatedV2: func(dir, path string, _ bool) error {
				judged = append(judged, dir)
				if !v2ok {
					return errors.New("not delegated")
				}
				return nil
			},
			setUpV2: func(dir string) error {
				setUp = append(setUp, dir)
				if !setupOK {
					return errors.New("busy")
				}
				return nil
			},
			systemd:     func() (bool, string, []string) { return false, "none", nil },
			delegatedV1: func(string) error { return nil },
		}
		m := decideLimits(cg, mi, h)
		var points []string
		for _, line := range strings.Split(mi, "\n") {
			if pre, post, ok := strings.Cut(line, " - "); ok {
				if pf, qf := strings.Fields(pre), strings.Fields(post); len(pf) >= 5 && len(qf) > 0 && (qf[0] == "cgroup" || qf[0] == "cgroup2") {
					points = append(points, filepath.Clean(pf[4]))
				}
			}
		}
		for _, d := range []string{m.V2, m.Memory, m.Pids} {
			if d == "" {
				continue
			}
			inside := false
			for _, p := range points {
				if d == p || strings.HasPrefix(d, p+"/") || p == "/" {
					inside = true
				}
			}
			if !inside {
				t.Fatalf("decideLimits chose %q, outside every cgroup mount %q", d, points)
			}
		}
		if len(setUp) > 0 && (!slices.Equal(setUp, judged) || !v2ok) {
			t.Fatalf("set up %q after judging %q (delegated %v)", setUp, judged, v2ok)
		}
		if m.Mode == LimitsV2 && (!v2ok || !setupOK || len(setUp) != 1 || m.V2 != setUp[0]) {
			t.Fatalf("mode %s over %q with delegated %v, set up %v (%q)", m.Mode, m.V2, v2ok, setupOK, setUp)
		}
	})
}
