package sandbox

import "os"

// CgroupHost are the facts that decide how this user gets memory and task limits (S6).
type CgroupHost struct {
	User string
	// UserManager: a systemd user manager runs for the user ($XDG_RUNTIME_DIR/systemd/private).
	UserManager bool
	// SystemManager: systemd is the system's init (/run/systemd/system).
	SystemManager bool
	// V2: the unified hierarchy is mounted at /sys/fs/cgroup (cgroup.controllers there).
	V2 bool
}

// ThisCgroupHost reads the facts of this host for the current user.
func ThisCgroupHost(getenv func(string) string) CgroupHost {
	h := CgroupHost{User: getenv("USER")}
	if h.User == "" {
		h.User = "$USER"
	}
	if rt := getenv("XDG_RUNTIME_DIR"); rt != "" {
		_, err := os.Stat(rt + "/systemd/private")
		h.UserManager = err == nil
	}
	_, err := os.Stat("/run/systemd/system")
	h.SystemManager = err == nil
	_, err = os.Stat("/sys/fs/cgroup/cgroup.controllers")
	h.V2 = err == nil
	return h
}

// LimitsFix is the command that gives the user's runs memory and task limits on this host:
// the packaged user unit where a user manager runs, the system unit where systemd is init,
// and otherwise a cgroup an administrator hands to the user, which anetd then uses when it is
// started inside it.
func LimitsFix(h CgroupHost) string {
	switch {
	case h.UserManager:
		return "systemctl --user enable --now anetd (the user unit delegates the memory and pids controllers)"
	case h.SystemManager:
		return "sudo systemctl enable --now anetd@" + h.User + " (the system unit delegates the memory and pids controllers)"
	case h.V2:
		d := "/sys/fs/cgroup/anet-" + h.User
		return "sudo sh -c \"echo +memory +pids > /sys/fs/cgroup/cgroup.subtree_control && mkdir -p " + d + " && chown -R " + h.User + " " + d + " && echo $$ > " + d + "/cgroup.procs\", then start anetd from this shell"
	}
	m, p := "/sys/fs/cgroup/memory/anet-"+h.User, "/sys/fs/cgroup/pids/anet-"+h.User
	return "sudo sh -c \"mkdir -p " + m + " " + p + " && chown -R " + h.User + " " + m + " " + p + " && echo $$ | tee " + m + "/cgroup.procs " + p + "/cgroup.procs\", then start anetd from this shell"
}
