// Package doctor checks the host for what the node's sandbox needs (S8, F2, L2) and holds
// the AppArmor profile text (A1–A3). Each finding is a check in the shared shape (pkg/check)
// with a reason code from pkg/reasons and, where there is one, the command that fixes it.
package doctor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/helperpath"
	"anet.dev/anet/pkg/reasons"
)

// Host says where to read the host's facts; tests point it at a fake /proc.
type Host struct {
	// ProcSys is /proc/sys.
	ProcSys string
	// AppArmorProfiles is the kernel's list of loaded profiles.
	AppArmorProfiles string
	// AppArmorPolicy is the kernel's dir of loaded profiles (a dir NAME.N with a file name per
	// profile), read where the list is not: Ubuntu lets only root read the list, but anyone
	// the names.
	AppArmorPolicy string
	// LookPath finds a program.
	LookPath func(string) (string, error)
}

// System is the real host; programs are looked up on the helpers' PATH, where anet-sandboxd
// looks for bwrap, not on the operator's.
var System = Host{
	ProcSys:          "/proc/sys",
	AppArmorProfiles: "/sys/kernel/security/apparmor/profiles",
	AppArmorPolicy:   "/sys/kernel/security/apparmor/policy/profiles",
	LookPath:         lookPathIn(helperpath.PATH),
}

// lookPathIn finds an executable file named name in the directories of path.
func lookPathIn(path string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, dir := range filepath.SplitList(path) {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s: not found in %s", name, path)
	}
}

// bwrapChecks are the host checks of the bubblewrap sandbox (Linux, and any platform
// without Seatbelt): bubblewrap present, user namespaces allowed by the kernel and by
// AppArmor.
func (h Host) bwrapChecks() []check.Check {
	var out []check.Check
	bw := check.Check{Name: "bubblewrap", Requirement: "L1", OK: true}
	if p, err := h.LookPath("bwrap"); err != nil {
		bw.OK, bw.Code, bw.Detail, bw.Fix = false, reasons.NoBwrap, "bwrap is not on the helpers' PATH ("+helperpath.PATH+")", "sudo apt-get install bubblewrap"
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

func (h Host) usernsCheck() check.Check {
	c := check.Check{Name: "userns", Requirement: "L2", OK: true, Detail: "unprivileged user namespaces are allowed"}
	fail := func(code reasons.Code, detail, fix string) check.Check {
		return check.Check{Name: c.Name, Requirement: c.Requirement, Code: code, Detail: detail, Fix: fix}
	}
	if v, ok := h.readInt("kernel/unprivileged_userns_clone"); ok && v == 0 {
		return fail(reasons.UsernsUnavailable, "kernel.unprivileged_userns_clone = 0", "sudo sysctl kernel.unprivileged_userns_clone=1 (or run the node where user namespaces are allowed)")
	}
	if v, ok := h.readInt("user/max_user_namespaces"); ok && v == 0 {
		return fail(reasons.UsernsUnavailable, "user.max_user_namespaces = 0", "raise user.max_user_namespaces")
	}
	if v, ok := h.readInt("kernel/apparmor_restrict_unprivileged_userns"); ok && v == 1 {
		loaded, err := h.profileLoaded("anet-bwrap")
		if loaded {
			c.Detail = "AppArmor restricts user namespaces; the anet-bwrap profile is loaded"
			return c
		}
		detail := "kernel.apparmor_restrict_unprivileged_userns = 1 and the anet-bwrap profile is not loaded"
		if err != nil {
			detail = "kernel.apparmor_restrict_unprivileged_userns = 1, and whether the anet-bwrap profile is loaded cannot be read here: " + err.Error()
		}
		return fail(reasons.UsernsBlocked, detail, InstallCommand)
	}
	return c
}

// profileLoaded reports whether the kernel has the AppArmor profile name loaded: from the
// list of profiles where this user may read it, else from the names in the policy dir. err
// says why neither could be read.
func (h Host) profileLoaded(name string) (bool, error) {
	list, errList := os.ReadFile(h.AppArmorProfiles)
	if errList == nil {
		for _, line := range strings.Split(string(list), "\n") {
			// "NAME (MODE)"
			if n, _, ok := strings.Cut(line, " ("); ok && n == name {
				return true, nil
			}
		}
		return false, nil
	}
	dirs, err := os.ReadDir(h.AppArmorPolicy)
	if err != nil {
		return false, fmt.Errorf("%w; %w", errList, err)
	}
	for _, d := range dirs {
		// The dir is the profile's name, mangled, with ".N"; the name file holds it exactly.
		if !strings.HasPrefix(d.Name(), name+".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(h.AppArmorPolicy, d.Name(), "name"))
		if err == nil && strings.TrimSpace(string(b)) == name {
			return true, nil
		}
	}
	return false, nil
}
