package bwrap

import (
	"errors"
	"os"
	"path/filepath"
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

const v2Cgroup = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/anetd.service\n"
const v2Mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"

// TestDetectCgroupfs: S6's preference order below systemd, from /proc texts.
func TestDetectCgroupfs(t *testing.T) {
	yes := func(string) error { return nil }
	no := func(d string) error { return errors.New(d + " is owned by uid 0") }
	cases := []struct {
		name      string
		cg, mi    string
		ok        func(string) error
		wantMode  LimitsMode
		wantMem   string
		wantPids  string
		wantInWhy string
	}{
		{"v1 delegated", hybridCgroup, hybridMountinfo, yes, LimitsV1, "/sys/fs/cgroup/memory/anet-test-1", "/sys/fs/cgroup/pids/anet-test-1", ""},
		{"v1 not delegated", hybridCgroup, hybridMountinfo, no, LimitsNone, "", "", "not delegated"},
		{"nothing mounted", hybridCgroup, "", yes, LimitsNone, "", "", "no memory and pids"},
		{"v2 without controllers file", v2Cgroup, v2Mountinfo, yes, LimitsNone, "", "", "lacks the memory and pids"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := detectCgroupfs(c.cg, c.mi, c.ok)
			if m.Mode != c.wantMode || m.Memory != c.wantMem || m.Pids != c.wantPids || !strings.Contains(m.Detail, c.wantInWhy) {
				t.Fatalf("detectCgroupfs = %+v, want mode %s mem %q pids %q detail containing %q", m, c.wantMode, c.wantMem, c.wantPids, c.wantInWhy)
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

// TestClassifyStart maps bwrap's own messages to F2's codes.
func TestClassifyStart(t *testing.T) {
	cases := []struct {
		msg  string
		want reasons.Code
	}{
		{"bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.", reasons.UsernsUnavailable},
		{"bwrap: Creating new namespace failed: No space left on device (max_user_namespaces exceeded)", reasons.UsernsUnavailable},
		{"bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted", reasons.NetnsFailed},
		{"bwrap: seccomp: invalid argument", reasons.SeccompFailed},
		{"bwrap: Can't find source path /nonexistent: No such file or directory", reasons.SandboxStartFailed},
	}
	for _, c := range cases {
		t.Run(string(c.want), func(t *testing.T) {
			if got := classifyStart(c.msg); got != c.want {
				t.Fatalf("classifyStart(%q) = %s, want %s", c.msg, got, c.want)
			}
		})
	}
}

// TestDetectCgroupfsUnifiedNeedsChildControllers (S6): a delegated cgroup v2 whose
// subtree_control does not enable memory and pids (a unit's cgroup holding the node's own
// processes, as on a stock Debian 12 with Delegate=memory pids) gives no run cgroup with limits
// to write, so it is no mechanism, and says why; with them enabled it is the v2 mechanism.
func TestDetectCgroupfsUnifiedNeedsChildControllers(t *testing.T) {
	root := t.TempDir()
	const rel = "/system.slice/anetd@op2.service"
	dir := filepath.Join(root, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.controllers", "cpu memory pids\n")
	write("cgroup.subtree_control", "\n")
	cg := "0::" + rel + "\n"
	mi := "30 23 0:26 / " + root + " rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
	yes := func(string) error { return nil }
	m := detectCgroupfs(cg, mi, yes)
	if m.Mode != LimitsNone || !strings.Contains(m.Detail, "does not enable memory and pids") {
		t.Fatalf("subtree_control empty: detectCgroupfs = %+v, want none naming subtree_control", m)
	}
	write("cgroup.subtree_control", "memory pids\n")
	if m := detectCgroupfs(cg, mi, yes); m.Mode != LimitsV2 || m.V2 != dir {
		t.Fatalf("subtree_control memory pids: detectCgroupfs = %+v, want v2 at %s", m, dir)
	}
}

// TestUserBusEnv (S6): systemd-run gets exactly the variables that lead it to the user manager,
// and only those that are set; a launch's environment is otherwise empty.
func TestUserBusEnv(t *testing.T) {
	env := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/op", "ANTHROPIC_API_KEY": "k"}
	got := userBusEnv(func(k string) string { return env[k] })
	if strings.Join(got, " ") != "XDG_RUNTIME_DIR=/run/user/1000" {
		t.Fatalf("userBusEnv = %q", got)
	}
	env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/run/user/1000/bus"
	got = userBusEnv(func(k string) string { return env[k] })
	if strings.Join(got, " ") != "XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus" {
		t.Fatalf("userBusEnv = %q", got)
	}
}
