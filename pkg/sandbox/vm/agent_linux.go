package vm

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
	"anet.dev/anet/pkg/sandbox/runinit"
	"anet.dev/anet/pkg/sandbox/seccomp"
	"anet.dev/anet/pkg/sandbox/vm/guestimage"
)

// AgentOptions configure `anet-sandboxd vm-agent`, which the guest init starts as pid 1 of
// the agent's new pid, mount and IPC namespaces, still root in the guest.
type AgentOptions struct {
	UID, GID int
	FileSize int64
	Argv     []string
	Stderr   io.Writer
}

// AgentInit puts itself behind the agent's wall (V2) and then runs the init every backend's
// runs have (pkg/sandbox/runinit: pid 1, starts the agent, forwards signals, reaps, returns
// the status). Its loopback relay is not here: the guest's own init relays over the link,
// which this process, behind the wall, cannot reach. The wall, in the
// order that leaves nothing privileged behind: a private /proc for this pid namespace, the
// agent's root, rlimits, an empty capability bounding set and no ambient capabilities, the
// agent's uid and gid (which clears the remaining capabilities), then no_new_privs and the
// same two seccomp programs as the bwrap tier, installed last so the steps before may use
// what they deny.
func AgentInit(o AgentOptions) int {
	logf := func(format string, a ...any) {
		if o.Stderr != nil {
			fmt.Fprintf(o.Stderr, "anet guest agent: "+format+"\n", a...)
		}
	}
	// The bounding set and the capability clearing are per thread: stay on this one, which
	// also forks the agent (runinit.Init starts it from the calling goroutine).
	runtime.LockOSThread()
	if err := agentWall(o); err != nil {
		logf("%v", err)
		return 126
	}
	return runinit.Init(runinit.InitOptions{Argv: o.Argv, Stderr: o.Stderr})
}

func agentWall(o AgentOptions) error {
	if o.UID <= 0 || o.GID <= 0 {
		return fmt.Errorf("uid %d gid %d: the agent never runs as root", o.UID, o.GID)
	}
	// The bwrap backend's two programs, as it builds them for an agent.
	progs, err := seccomp.Filters(seccomp.Options{})
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	lastCap, err := launch.ReadNumber("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return fmt.Errorf("cap_last_cap: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	proc := guestimage.AgentRoot + "/proc"
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := unix.Chroot(guestimage.AgentRoot); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	if err := os.Chdir(sandbox.SandboxWork); err != nil {
		return fmt.Errorf("chdir %s: %w", sandbox.SandboxWork, err)
	}
	fs := uint64(o.FileSize)
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: fs, Max: fs}); err != nil {
		return fmt.Errorf("RLIMIT_FSIZE: %w", err)
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fmt.Errorf("RLIMIT_CORE: %w", err)
	}
	for c := 0; c <= int(lastCap); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	// syscall's set*id and setgroups apply to every thread of the process.
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(o.GID, o.GID, o.GID); err != nil {
		return fmt.Errorf("setresgid: %w", err)
	}
	if err := syscall.Setresuid(o.UID, o.UID, o.UID); err != nil {
		return fmt.Errorf("setresuid: %w", err)
	}
	if err := seccomp.Install(progs); err != nil {
		return err
	}
	return nil
}
