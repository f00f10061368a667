// Command unitsandbox runs a command under the restrictions that systemd directives of the
// packaged units would put on the service, so that the tests can show each directive keeps a
// sandboxed run working (C4) on a machine without systemd as PID 1.
//
//	unitsandbox [-user UID:GID] [-d Directive=value]... -- command [arg]...
//
// It does what systemd's exec step does, in the same order: a mount namespace of its own
// with the directives' read-only and inaccessible paths (this needs root, as it does for
// systemd), the capability bounding set, the user (User=, with -user), no_new_privs, the
// seccomp filters; then it executes the command. A directive it cannot emulate is an error:
// the test must then say why the directive cannot affect a run.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

func init() {
	// Capability bounding sets are per thread: the whole set-up and the exec happen on the
	// main thread.
	runtime.LockOSThread()
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "unitsandbox:", err)
		os.Exit(125)
	}
}

func run() error {
	user, directives, argv, err := parseArgs(os.Args[1:])
	if err != nil {
		return err
	}
	return apply(user, directives, argv)
}

// ids is a -user value: the uid and gid the command runs as.
type ids struct{ uid, gid int }

func parseArgs(args []string) (*ids, map[string]string, []string, error) {
	d := map[string]string{}
	var user *ids
	for len(args) > 0 && args[0] != "--" {
		if len(args) < 2 {
			return nil, nil, nil, fmt.Errorf("usage: unitsandbox [-user UID:GID] [-d Directive=value]... -- command")
		}
		switch args[0] {
		case "-d":
			k, v, ok := strings.Cut(args[1], "=")
			if !ok {
				return nil, nil, nil, fmt.Errorf("directive %q is not Key=value", args[1])
			}
			d[k] = v
		case "-user":
			u, g, _ := strings.Cut(args[1], ":")
			uid, err1 := strconv.Atoi(u)
			gid, err2 := strconv.Atoi(g)
			if err1 != nil || err2 != nil {
				return nil, nil, nil, fmt.Errorf("-user %q is not UID:GID", args[1])
			}
			user = &ids{uid, gid}
		default:
			return nil, nil, nil, fmt.Errorf("unknown flag %q", args[0])
		}
		args = args[2:]
	}
	if len(args) < 2 {
		return nil, nil, nil, fmt.Errorf("no command after --")
	}
	return user, d, args[1:], nil
}

// plan collects what the directives ask for, then is applied in systemd's order: mounts,
// bounding set, no_new_privs, seccomp, exec.
type plan struct {
	readOnly     []string
	inaccessible []string
	dropCaps     []uintptr // empty with dropAll: every capability
	dropAll      bool
	nnp          bool
	umask        int
	rules        []seccomp.SyscallGroup
	nativeOnly   bool
}

func apply(user *ids, d map[string]string, argv []string) error {
	var p plan
	p.umask = -1
	for k, v := range d {
		if err := p.add(k, v); err != nil {
			return fmt.Errorf("%s=%s: %w", k, v, err)
		}
	}
	if len(p.readOnly)+len(p.inaccessible) > 0 || p.dropAll || len(p.dropCaps) > 0 || user != nil {
		if os.Geteuid() != 0 {
			return fmt.Errorf("mounts, the bounding set and User= need root, as for systemd: run the test as root (sudo go test ./packaging)")
		}
	}
	if os.Geteuid() == 0 {
		// PrivateMounts=: this thread (the one that executes the command) gets its own
		// mount namespace; nothing done here reaches the host.
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("unshare mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			return fmt.Errorf("make / a slave mount: %w", err)
		}
		empty, err := os.MkdirTemp("", "unitsandbox-")
		if err != nil {
			return err
		}
		for _, path := range p.readOnly {
			if err := readOnly(path); err != nil {
				return err
			}
		}
		for _, path := range p.inaccessible {
			if err := inaccessible(path, empty); err != nil {
				return err
			}
		}
	}
	if p.umask >= 0 {
		unix.Umask(p.umask)
	}
	if err := dropBounding(p.dropAll, p.dropCaps); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if user != nil {
		// User=: supplementary groups, gid, then uid; the uid change clears every
		// capability of this thread.
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			return fmt.Errorf("setgroups: %w", e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(user.gid), uintptr(user.gid), uintptr(user.gid)); e != 0 {
			return fmt.Errorf("setresgid: %w", e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(user.uid), uintptr(user.uid), uintptr(user.uid)); e != 0 {
			return fmt.Errorf("setresuid: %w", e)
		}
	}
	// systemd sets no_new_privs for every seccomp directive of a service without
	// CAP_SYS_ADMIN; the kernel requires it of an unprivileged filter anyway.
	if p.nnp || len(p.rules) > 0 || p.nativeOnly {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	if p.nativeOnly {
		if err := loadNativeOnly(); err != nil {
			return err
		}
	}
	if len(p.rules) > 0 {
		f := seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync,
			Policy: seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: p.rules}}
		if err := seccomp.LoadFilter(f); err != nil {
			return fmt.Errorf("load seccomp filter: %w", err)
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return unix.Exec(path, argv, os.Environ())
}

func (p *plan) deny(names ...string) {
	p.rules = append(p.rules, seccomp.SyscallGroup{Names: knownNames(names), Action: seccomp.ActionErrno})
}

func (p *plan) denyIf(name string, sets ...seccomp.ArgumentConditions) {
	p.rules = append(p.rules, seccomp.SyscallGroup{Action: seccomp.ActionErrno,
		NamesWithCondtions: []seccomp.NameWithConditions{}})
	g := &p.rules[len(p.rules)-1]
	for _, c := range sets {
		g.NamesWithCondtions = append(g.NamesWithCondtions, seccomp.NameWithConditions{Name: name, Conditions: c})
	}
}

func cond(arg uint32, op seccomp.Operation, v uint64) seccomp.Condition {
	return seccomp.Condition{Argument: arg, Operation: op, Value: v}
}

// add records one directive. Each case says what systemd does for it (systemd.exec(5)).
func (p *plan) add(k, v string) error {
	yes := v == "yes" || v == "true"
	switch k {
	case "NoNewPrivileges":
		p.nnp = yes
	case "UMask":
		m, err := strconv.ParseUint(v, 8, 32)
		if err != nil {
			return err
		}
		p.umask = int(m)
	case "CapabilityBoundingSet":
		if v != "" {
			return errors.New("only the empty bounding set is emulated")
		}
		p.dropAll = true
	case "AmbientCapabilities":
		if v != "" {
			return errors.New("only the empty ambient set is emulated")
		}
	case "PrivateMounts":
		// The mount namespace every run of this program as root has.
	case "ProtectSystem":
		if v != "full" && v != "yes" {
			return errors.New("only yes and full are emulated")
		}
		p.readOnly = append(p.readOnly, "/usr", "/boot", "/efi")
		if v == "full" {
			p.readOnly = append(p.readOnly, "/etc")
		}
	case "ProtectKernelModules":
		p.inaccessible = append(p.inaccessible, "/usr/lib/modules", "/lib/modules")
		p.dropCaps = append(p.dropCaps, unix.CAP_SYS_MODULE)
		return p.group("@module")
	case "ProtectClock":
		// The device rule it implies (DeviceAllow=char-rtc r) needs the devices cgroup
		// controller and is not emulated; see the unit's comment.
		p.dropCaps = append(p.dropCaps, unix.CAP_SYS_TIME, unix.CAP_WAKE_ALARM)
		return p.group("@clock")
	case "ProtectKernelLogs":
		p.inaccessible = append(p.inaccessible, "/proc/kmsg", "/dev/kmsg")
		p.dropCaps = append(p.dropCaps, unix.CAP_SYSLOG)
		p.deny("syslog")
	case "ProtectKernelTunables":
		p.readOnly = append(p.readOnly, "/proc/sys", "/proc/sysrq-trigger", "/proc/latency_stats", "/proc/acpi",
			"/proc/timer_stats", "/proc/fs", "/proc/irq", "/sys")
		p.inaccessible = append(p.inaccessible, "/proc/kallsyms", "/proc/kcore")
	case "ProtectHostname":
		// A UTS namespace of its own, and sethostname/setdomainname refused.
		p.deny("sethostname", "setdomainname")
	case "RestrictNamespaces":
		if !yes {
			return errors.New("only yes is emulated")
		}
		p.deny("unshare", "setns")
		p.denyIf("clone", seccomp.ArgumentConditions{cond(0, seccomp.BitsSet, unix.CLONE_NEWUSER)},
			seccomp.ArgumentConditions{cond(0, seccomp.BitsSet, unix.CLONE_NEWNS)})
	case "LockPersonality":
		// Only the current persona (PER_LINUX) and the query value pass.
		p.denyIf("personality", seccomp.ArgumentConditions{cond(0, seccomp.NotEqual, 0), cond(0, seccomp.NotEqual, 0xffffffff)})
	case "RestrictRealtime":
		for _, pol := range []uint64{unix.SCHED_FIFO, unix.SCHED_RR, 6 /* SCHED_DEADLINE */} {
			p.denyIf("sched_setscheduler", seccomp.ArgumentConditions{cond(1, seccomp.Equal, pol)})
		}
	case "RestrictSUIDSGID":
		for _, c := range []struct {
			name string
			arg  uint32
		}{{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"mkdir", 1}, {"mkdirat", 2}, {"creat", 1}} {
			p.denyIf(c.name, seccomp.ArgumentConditions{cond(c.arg, seccomp.BitsSet, unix.S_ISUID)},
				seccomp.ArgumentConditions{cond(c.arg, seccomp.BitsSet, unix.S_ISGID)})
		}
	case "SystemCallArchitectures":
		if v != "native" {
			return errors.New("only native is emulated")
		}
		p.nativeOnly = true
	case "RestrictAddressFamilies":
		allowed := seccomp.ArgumentConditions{}
		for _, name := range strings.Fields(v) {
			af, ok := families[name]
			if !ok {
				return fmt.Errorf("unknown family %s", name)
			}
			allowed = append(allowed, cond(0, seccomp.NotEqual, af))
		}
		p.denyIf("socket", allowed)
	case "SystemCallFilter":
		groups, ok := strings.CutPrefix(v, "~")
		if !ok {
			return errors.New("only deny lists (~...) are emulated")
		}
		for _, g := range strings.Fields(groups) {
			if err := p.group(g); err != nil {
				return err
			}
		}
	case "SystemCallErrorNumber":
		// The filters here return EPERM for every refused call, as this directive asks.
		if v != "EPERM" {
			return errors.New("only EPERM is emulated")
		}
	default:
		return errors.New("no emulation for this directive")
	}
	return nil
}

var families = map[string]uint64{"AF_UNIX": unix.AF_UNIX, "AF_INET": unix.AF_INET, "AF_INET6": unix.AF_INET6, "AF_NETLINK": unix.AF_NETLINK}

// group denies the members of a systemd syscall group, as systemd-analyze lists them: the
// same tables systemd applies.
func (p *plan) group(name string) error {
	out, err := exec.Command("systemd-analyze", "syscall-filter", name).Output()
	if err != nil {
		return fmt.Errorf("systemd-analyze syscall-filter %s: %w", name, err)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || l == name || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "@"):
			return fmt.Errorf("group %s includes %s: nested groups are not emulated", name, l)
		default:
			names = append(names, l)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("systemd-analyze listed no syscall in %s", name)
	}
	p.deny(names...)
	return nil
}

// knownNames keeps the names this architecture has (systemd's groups list every arch's).
func knownNames(names []string) []string {
	info, err := arch.GetInfo("")
	if err != nil {
		return names
	}
	var out []string
	for _, n := range names {
		if _, ok := info.SyscallNames[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// loadNativeOnly refuses every syscall made through another ABI (i386 through int 0x80, x32),
// as SystemCallArchitectures=native does.
func loadNativeOnly() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	kill := uint32(unix.SECCOMP_RET_KILL_PROCESS)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: kill},
		bpf.LoadAbsolute{Off: 0, Size: 4},                                       // seccomp_data.nr
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1}, // __X32_SYSCALL_BIT
		bpf.RetConstant{Val: kill},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	filters := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filters[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("load architecture filter: %w", e)
	}
	return nil
}

// readOnly re-mounts path read-only, keeping the flags a namespace may not clear.
func readOnly(path string) error {
	path, ok := existing(path)
	if !ok {
		return nil
	}
	if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", path, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME}} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", path, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", path, err)
	}
	return nil
}

// inaccessible covers path with an empty directory or file of mode 0 (systemd uses the
// same kind of node from /run/systemd/inaccessible).
func inaccessible(path, emptyDir string) error {
	path, ok := existing(path)
	if !ok {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	src := filepath.Join(emptyDir, "dir")
	if fi.IsDir() {
		if err := os.MkdirAll(src, 0); err != nil {
			return err
		}
	} else {
		src = filepath.Join(emptyDir, "file")
		if err := os.WriteFile(src, nil, 0); err != nil && !os.IsExist(err) && !os.IsPermission(err) {
			return err
		}
	}
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("make %s inaccessible: %w", path, err)
	}
	return nil
}

// existing resolves symlinks (/lib -> usr/lib) and reports whether the path exists.
func existing(path string) (string, bool) {
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	return r, true
}

func dropBounding(all bool, caps []uintptr) error {
	if all {
		b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
		if err != nil {
			return err
		}
		last, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return err
		}
		caps = nil
		for c := 0; c <= last; c++ {
			caps = append(caps, uintptr(c))
		}
	}
	for _, c := range caps {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}
