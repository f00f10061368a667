package runinit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitOptions configure anet-runinit, pid 1 of a run (E1, S2).
type InitOptions struct {
	// Upstream is the run's endpoint and Port the loopback port relayed to it; a nil
	// Upstream runs no relay.
	Upstream Upstream
	Port     int
	// EnvFile holds the handed-in variables, NUL-separated; "" for none.
	EnvFile string
	Argv    []string
	// Stderr receives init's own messages.
	Stderr io.Writer
	// Hold, when set, is read before the agent starts, after Gate: the agent starts only on
	// the byte Release, which the launcher writes once it has moved init into the run's
	// cgroups from outside (cgroup v2, a systemd scope: S6); anything else, or its end, ends
	// init without an agent. On cgroup v1 there is none: bwrap, init and the agent are born
	// in the run's cgroups (pkg/sandbox/bwrap).
	Hold io.ReadCloser
	// FileSize is the run's RLIMIT_FSIZE (soft and hard), set with RLIMIT_CORE 0 before
	// anything else; 0 leaves the file size limit as inherited. Init sets them itself, so no
	// launcher has to reach into the sandbox before the agent may start.
	FileSize int64
	// Gate, when set, runs after the relay listens and before the agent starts: the agent
	// starts only if it returns nil, otherwise Init returns ExitGated without starting it
	// (the probe's checks folded into the run, S7, P2: pkg/sandbox/gate).
	Gate func() error
}

// ExitGated is Init's status when Gate or Hold kept the agent from starting.
const ExitGated = 125

// Release is the byte on Hold that lets init start the agent.
const Release byte = 1

// ExitLimits is Init's status when it could not set the run's rlimits; the agent never
// started.
const ExitLimits = 124

// Init is pid 1 inside the sandbox. It holds nothing the agent lacks (same uid, same seccomp
// filter, same view) and enforces nothing: every rule is applied by the endpoint on the other
// side of the socket. It relays 127.0.0.1:Port to the endpoint, starts the agent, forwards
// signals, reaps every orphan, and returns the agent's status (128+n when signal n ended it).
func Init(o InitOptions) int {
	logf := func(format string, a ...any) {
		if o.Stderr != nil {
			fmt.Fprintf(o.Stderr, "run init: "+format+"\n", a...)
		}
	}
	// No core file may carry the run's memory to disk, whatever init inherited.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		logf("agent not started: set RLIMIT_CORE 0: %v", err)
		return ExitLimits
	}
	if o.FileSize > 0 {
		fs := uint64(o.FileSize)
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: fs, Max: fs}); err != nil {
			logf("agent not started: set RLIMIT_FSIZE %d: %v", o.FileSize, err)
			return ExitLimits
		}
	}
	// Non-dumpable: the agent (same uid) cannot ptrace or read /proc/1/mem of init.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		logf("set non-dumpable: %v", err)
		return 126
	}
	if len(o.Argv) == 0 {
		logf("no agent command")
		return 126
	}
	// Only stdio reaches the agent, whatever bwrap or its parent left open.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		logf("mark fds close-on-exec: %v", err)
		return 126
	}
	env := os.Environ()
	if o.EnvFile != "" {
		b, err := os.ReadFile(o.EnvFile)
		if err != nil {
			logf("read env: %v", err)
			return 126
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			if len(kv) > 0 {
				env = append(env, string(kv))
			}
		}
	}
	// Signals are registered before the agent starts so none is lost in between.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2)
	if o.Upstream != nil {
		ln, err := ListenLoopback(o.Port)
		if err != nil {
			logf("%v", err)
			return 126
		}
		go Relay(ln, o.Upstream, logf)
	}
	if o.Gate != nil {
		if err := o.Gate(); err != nil {
			logf("agent not started: %v", err)
			return ExitGated
		}
	}
	if o.Hold != nil {
		var b [1]byte
		_, err := io.ReadFull(o.Hold, b[:])
		o.Hold.Close()
		if err != nil || b[0] != Release {
			logf("agent not started: the launcher did not release it (%v)", err)
			return ExitGated
		}
	}
	// syscall.ForkExec, not os.StartProcess: init reaps by pid itself, and os's first start
	// forks an extra child to test pidfd support, on every launch's path.
	agent, err := syscall.ForkExec(o.Argv[0], o.Argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
		// Its own group, so a forwarded signal reaches the agent's pipeline, not init.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		logf("start agent %s: %v", o.Argv[0], err)
		return 127
	}
	go func() {
		for sig := range sigs {
			_ = syscall.Kill(-agent, sig.(syscall.Signal))
		}
	}()
	// Reaped here, in a blocking wait, not on SIGCHLD through the runtime's signal goroutine:
	// the agent's end reaches the launcher one hand-off sooner.
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			logf("wait for the agent: %v", err)
			return 126
		}
		if pid != agent {
			continue // an orphan reparented to us: reaped
		}
		// pid 1 leaving makes the kernel kill the rest of the namespace.
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}
