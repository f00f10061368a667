package attack

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// statusFields reads selected "Key:\tvalue" lines of a /proc/<pid>/status file.
func statusFields(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out, sc.Err()
}

// checkProcStatus: no effective capabilities, NO_NEW_PRIVS set, seccomp in filter mode with
// both of our filters (arch and main) installed (S4).
func checkProcStatus(Env) Result {
	st, err := statusFields("/proc/self/status")
	if err != nil {
		return notBlocked("error", fmt.Sprintf("read /proc/self/status: %v", err))
	}
	var bad []string
	if st["CapEff"] != "0000000000000000" {
		bad = append(bad, "CapEff "+st["CapEff"]+", want 0000000000000000")
	}
	if st["NoNewPrivs"] != "1" {
		bad = append(bad, "NoNewPrivs "+st["NoNewPrivs"]+", want 1")
	}
	if st["Seccomp"] != "2" {
		bad = append(bad, "Seccomp "+st["Seccomp"]+", want 2")
	}
	if n, err := strconv.Atoi(st["Seccomp_filters"]); err != nil || n < 2 {
		bad = append(bad, "Seccomp_filters "+st["Seccomp_filters"]+", want at least 2 (arch and main)")
	}
	detail := fmt.Sprintf("CapEff %s, NoNewPrivs %s, Seccomp %s, Seccomp_filters %s",
		st["CapEff"], st["NoNewPrivs"], st["Seccomp"], st["Seccomp_filters"])
	if len(bad) > 0 {
		return notBlocked("weak", strings.Join(bad, "; "))
	}
	return blocked("ok", detail)
}

// attackSetuidSu starts the setuid-root `su` and reads its credentials while it waits for a
// password (stdin is a pipe nobody writes to) or, when the caller is already root, while
// its `cat` child waits on the same pipe. NO_NEW_PRIVS (and an unmapped root uid) make the
// setuid bit inert: su must run with the caller's euid and capabilities (S4).
func attackSetuidSu(env Env) Result {
	su := ""
	for _, p := range []string{"/usr/bin/su", "/bin/su"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSetuid != 0 {
			su = p
			break
		}
	}
	if su == "" {
		return notBlocked("error", "no setuid su in /usr/bin or /bin: the check cannot run")
	}
	self, err := statusFields("/proc/self/status")
	if err != nil {
		return notBlocked("error", fmt.Sprintf("read own status: %v", err))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return notBlocked("error", fmt.Sprintf("pipe: %v", err))
	}
	defer w.Close()
	cmd := exec.Command(su, "root", "-c", "cat")
	cmd.Stdin = r
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling tty to prompt on
	if err := cmd.Start(); err != nil {
		r.Close()
		return notBlocked("error", fmt.Sprintf("start %s: %v", su, err))
	}
	r.Close()
	// Start returns when the exec closed su's close-on-exec fds, which the kernel does
	// before it names the process su and commits su's credentials: wait until it has (a
	// slow machine, a TCG guest above all, widens that window). The process is not reaped
	// before we read, so even an early exit leaves the status readable.
	var st map[string]string
	for deadline := time.Now().Add(env.timeout()); ; {
		st, err = statusFields(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil || st["Name"] == "su" || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil {
		return notBlocked("error", fmt.Sprintf("read su's status: %v", err))
	}
	euid := func(m map[string]string) string {
		f := strings.Fields(m["Uid"])
		if len(f) < 2 {
			return "?"
		}
		return f[1]
	}
	detail := fmt.Sprintf("su euid %s CapEff %s; caller euid %s CapEff %s", euid(st), st["CapEff"], euid(self), self["CapEff"])
	if st["Name"] != "su" {
		return notBlocked("error", "inspected a process that is not su: "+st["Name"])
	}
	if euid(st) != euid(self) || st["CapEff"] != self["CapEff"] {
		return notBlocked("gained", detail)
	}
	return blocked("euid unchanged", detail)
}

// checkProcPids: /proc must belong to the run's own pid namespace, so it lists only the
// run's processes. Two facts together show it: the pid namespace differs from the host's,
// and /proc/self names this process by its pid in that namespace (a /proc mounted from
// another namespace would not) (S1).
func checkProcPids(env Env) Result {
	if env.HostPidNS == "" {
		return notConfigured("HostPidNS")
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return notBlocked("error", fmt.Sprintf("read pid namespace: %v", err))
	}
	if ns == env.HostPidNS {
		return notBlocked("visible", "the run shares the host's pid namespace "+ns)
	}
	self, err := os.Readlink("/proc/self")
	if err != nil {
		return notBlocked("error", fmt.Sprintf("read /proc/self: %v", err))
	}
	if self != strconv.Itoa(os.Getpid()) {
		return notBlocked("visible", fmt.Sprintf("/proc/self is %s but getpid() is %d: /proc belongs to another pid namespace", self, os.Getpid()))
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return notBlocked("error", fmt.Sprintf("list /proc: %v", err))
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return blocked("not visible", fmt.Sprintf("own pid namespace %s; /proc lists %d processes", ns, n))
}

// checkHostname: the run has its own UTS namespace and host name (S1).
func checkHostname(env Env) Result {
	if env.HostHostname == "" {
		return notConfigured("HostHostname")
	}
	h, err := os.Hostname()
	if err != nil {
		return notBlocked("error", fmt.Sprintf("hostname: %v", err))
	}
	if h == env.HostHostname {
		return notBlocked("same", "the run sees the host's name "+h)
	}
	return blocked("differs", fmt.Sprintf("host name %q, not the host's", h))
}
