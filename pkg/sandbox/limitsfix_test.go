package sandbox

import (
	"strings"
	"testing"
)

// S6: the command that gives memory and task limits is the one this host's facts call for.
func TestLimitsFix(t *testing.T) {
	for _, tc := range []struct {
		name string
		host CgroupHost
		want []string
	}{
		{"user manager", CgroupHost{User: "op", UserManager: true, SystemManager: true, V2: true}, []string{"systemctl --user enable --now anetd"}},
		{"system manager only", CgroupHost{User: "op", SystemManager: true, V2: true}, []string{"sudo systemctl enable --now anetd@op"}},
		{"cgroup v2, no systemd", CgroupHost{User: "op", V2: true}, []string{"+memory +pids", "/sys/fs/cgroup/anet-op", "chown -R op", "then start anetd from this shell"}},
		{"cgroup v1, no systemd", CgroupHost{User: "op"}, []string{"/sys/fs/cgroup/memory/anet-op", "/sys/fs/cgroup/pids/anet-op", "chown -R op", "then start anetd from this shell"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LimitsFix(tc.host)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("LimitsFix = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}
