// Package doctor checks the host for what the node's sandbox needs (S8, F2, L2) and holds
// the AppArmor profile text (A1–A3). Each finding is a value with a reason code from
// pkg/reasons and, where there is one, the command that fixes it.
package doctor

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/reasons"
)

// Check is one finding.
type Check struct {
	Name   string       `json:"name"`
	OK     bool         `json:"ok"`
	Code   reasons.Code `json:"code,omitempty"`
	Detail string       `json:"detail,omitempty"`
	Fix    string       `json:"fix,omitempty"`
}

// Host says where to read the host's facts; tests point it at a fake /proc.
type Host struct {
	// ProcSys is /proc/sys.
	ProcSys string
	// AppArmorProfiles is the kernel's list of loaded profiles.
	AppArmorProfiles string
	// LookPath finds a program.
	LookPath func(string) (string, error)
}

// System is the real host.
var System = Host{ProcSys: "/proc/sys", AppArmorProfiles: "/sys/kernel/security/apparmor/profiles", LookPath: exec.LookPath}

// HostChecks runs the checks that need no sandbox: bubblewrap present, user namespaces
// allowed by the kernel and by AppArmor.
func (h Host) HostChecks() []Check {
	var out []Check
	bw := Check{Name: "bubblewrap", OK: true}
	if p, err := h.LookPath("bwrap"); err != nil {
		bw.OK, bw.Code, bw.Detail, bw.Fix = false, reasons.NoBwrap, "bwrap is not on PATH", "sudo apt-get install bubblewrap"
	} else {
		bw.Detail = p
		if v, err := exec.Command(p, "--version").Output(); err == nil {
			bw.Detail += " (" + strings.TrimSpace(string(v)) + ")"
		}
	}
	out = append(out, bw)
	out = append(out, h.usernsCheck())
	return out
}

func (h Host) readInt(rel string) (int, bool) {
	data, err := os.ReadFile(h.ProcSys + "/" + rel)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return v, err == nil
}

func (h Host) usernsCheck() Check {
	c := Check{Name: "user namespaces", OK: true, Detail: "unprivileged user namespaces are allowed"}
	if v, ok := h.readInt("kernel/unprivileged_userns_clone"); ok && v == 0 {
		return Check{Name: c.Name, Code: reasons.UsernsUnavailable, Detail: "kernel.unprivileged_userns_clone = 0", Fix: "sudo sysctl kernel.unprivileged_userns_clone=1 (or run the node where user namespaces are allowed)"}
	}
	if v, ok := h.readInt("user/max_user_namespaces"); ok && v == 0 {
		return Check{Name: c.Name, Code: reasons.UsernsUnavailable, Detail: "user.max_user_namespaces = 0", Fix: "raise user.max_user_namespaces"}
	}
	if v, ok := h.readInt("kernel/apparmor_restrict_unprivileged_userns"); ok && v == 1 {
		profiles, _ := os.ReadFile(h.AppArmorProfiles)
		if bytes.Contains(profiles, []byte("anet-bwrap ")) {
			c.Detail = "AppArmor restricts user namespaces; the anet-bwrap profile is loaded"
			return c
		}
		return Check{Name: c.Name, Code: reasons.UsernsBlocked, Detail: "kernel.apparmor_restrict_unprivileged_userns = 1 and the anet-bwrap profile is not loaded", Fix: InstallCommand}
	}
	return c
}
