// Package attack is the in-sandbox attack battery: each attack tries one thing a sandboxed
// run must not be able to do and reports whether it was stopped for the right reason (an
// errno, a signal, or "not visible"). A few entries are checks rather than attacks (loopback
// works, /proc/self/status shows no capabilities, NO_NEW_PRIVS and seccomp); for them
// Blocked means "the promised property holds".
//
// The same code serves the launcher's tests and `anet-sandboxd self-test`: the host side
// opens the canaries (a TCP listener on host loopback, an abstract unix socket, a socket
// under $XDG_RUNTIME_DIR, planted secrets), passes their coordinates in an Env, and runs
// `anet-sandboxd attack [--json] NAME…|all` inside the sandbox, which calls Run.
//
// Attacks that may kill their process (x32, int 0x80) or must own a session (TIOCSTI), or
// must not leave a trace on the tracer (ptrace), run in a child made by re-executing
// Env.ChildArgv + NAME (default `/proc/self/exe attack --child NAME`). The program that
// embeds this package must hand `attack --child NAME` to ChildMain before doing anything
// else; see ChildMain.
//
// Do not run the battery on a host outside a sandbox as root: most attacks are written to be
// harmless there (temporary mount points, invalid arguments), but they are attacks.
package attack

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/check"
)

// Result is the outcome of one attack or check.
type Result struct {
	Name        string `json:"name"`
	Requirement string `json:"requirement"`
	// Blocked is true only when the attack failed for the expected reason (or the check's
	// property holds). Succeeding, or failing for another reason, is Blocked=false.
	Blocked bool `json:"blocked"`
	// How is the reason: an errno name ("EPERM"), "signal SIGSYS", "killed", "not visible",
	// "ok" for a passing check, or "succeeded".
	How    string `json:"how"`
	Detail string `json:"detail,omitempty"`
}

// Check is the result in the shared check shape (pkg/check): ok when blocked, the way it was
// stopped ("EPERM", "signal SIGSYS", "succeeded") leading the detail.
func (r Result) Check() check.Check {
	c := check.Check{Name: r.Name, Requirement: r.Requirement, OK: r.Blocked, Detail: r.How}
	if r.Detail != "" {
		c.Detail += ": " + r.Detail
	}
	return c
}

// Command is anet-sandboxd's hidden subcommand that runs the battery inside a sandbox:
// `anet-sandboxd attack [--json] NAME…|all`.
const Command = "attack"

// ChildFlag is the argument after `attack` that marks a child run.
const ChildFlag = "--child"

// DefaultChildArgv re-executes the running binary as `attack --child`; Run appends NAME.
var DefaultChildArgv = []string{"/proc/self/exe", Command, ChildFlag}

// DefaultExternalAddr is a public address used when Env.ExternalAddr is empty.
const DefaultExternalAddr = "1.1.1.1:443"

// DefaultTimeout bounds each attack (connects, children).
const DefaultTimeout = 10 * time.Second

// Env tells the attacks what to aim at. The host side fills it in and passes it into the
// sandbox with Environ (environment variables); the attack subcommand reads it back with
// FromEnviron. Empty targets make the attacks that need them report Blocked=false.
type Env struct {
	HostTCPPort      int    // port of a TCP listener on the host's 127.0.0.1
	ExternalAddr     string // host:port of an external address (DefaultExternalAddr if empty)
	AbstractName     string // name of a host abstract unix socket, without the leading '@'
	RuntimeSocket    string // path of a host socket under $XDG_RUNTIME_DIR
	SSHKeyPath       string // host path of a planted ~/.ssh/id_rsa of the operator
	ControlTokenPath string // host path of the node's control token
	DataDir          string // host path of the node's data dir
	HostHostname     string // the host's host name (the sandbox's must differ)
	HostPidNS        string // the host's /proc/self/ns/pid link, e.g. "pid:[4026531836]"
	// ChildArgv is the command that runs a child attack, NAME appended. Not passed by
	// Environ: inside the sandbox the default is right.
	ChildArgv []string
	Timeout   time.Duration
}

func (e Env) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

func (e Env) childArgv() []string {
	if len(e.ChildArgv) > 0 {
		return e.ChildArgv
	}
	return DefaultChildArgv
}

// WithHostFacts returns e with HostHostname and HostPidNS read from the calling process,
// which must be the host side, outside the sandbox.
func (e Env) WithHostFacts() (Env, error) {
	h, err := os.Hostname()
	if err != nil {
		return e, fmt.Errorf("host facts: hostname: %w", err)
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return e, fmt.Errorf("host facts: pid namespace: %w", err)
	}
	e.HostHostname, e.HostPidNS = h, ns
	return e, nil
}

// Environment variable names used by Environ and FromEnviron.
const (
	envHostTCPPort  = "ANET_ATTACK_HOST_TCP_PORT"
	envExternalAddr = "ANET_ATTACK_EXTERNAL_ADDR"
	envAbstract     = "ANET_ATTACK_ABSTRACT_NAME"
	envRuntimeSock  = "ANET_ATTACK_RUNTIME_SOCKET"
	envSSHKey       = "ANET_ATTACK_SSH_KEY"
	envControlToken = "ANET_ATTACK_CONTROL_TOKEN"
	envDataDir      = "ANET_ATTACK_DATA_DIR"
	envHostname     = "ANET_ATTACK_HOST_HOSTNAME"
	envHostPidNS    = "ANET_ATTACK_HOST_PIDNS"
	envTimeout      = "ANET_ATTACK_TIMEOUT"
)

// Environ encodes e as NAME=value strings (only non-empty fields). They hold paths and names,
// never a secret's content.
func (e Env) Environ() []string {
	var out []string
	add := func(k, v string) {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	if e.HostTCPPort != 0 {
		add(envHostTCPPort, strconv.Itoa(e.HostTCPPort))
	}
	add(envExternalAddr, e.ExternalAddr)
	add(envAbstract, e.AbstractName)
	add(envRuntimeSock, e.RuntimeSocket)
	add(envSSHKey, e.SSHKeyPath)
	add(envControlToken, e.ControlTokenPath)
	add(envDataDir, e.DataDir)
	add(envHostname, e.HostHostname)
	add(envHostPidNS, e.HostPidNS)
	if e.Timeout != 0 {
		add(envTimeout, e.Timeout.String())
	}
	return out
}

// FromEnviron decodes what Environ encoded; getenv is usually os.Getenv.
func FromEnviron(getenv func(string) string) (Env, error) {
	e := Env{
		ExternalAddr:     getenv(envExternalAddr),
		AbstractName:     getenv(envAbstract),
		RuntimeSocket:    getenv(envRuntimeSock),
		SSHKeyPath:       getenv(envSSHKey),
		ControlTokenPath: getenv(envControlToken),
		DataDir:          getenv(envDataDir),
		HostHostname:     getenv(envHostname),
		HostPidNS:        getenv(envHostPidNS),
	}
	if v := getenv(envHostTCPPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			return Env{}, fmt.Errorf("attack env: %s=%q is not a port", envHostTCPPort, v)
		}
		e.HostTCPPort = p
	}
	if v := getenv(envTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Env{}, fmt.Errorf("attack env: %s=%q is not a positive duration", envTimeout, v)
		}
		e.Timeout = d
	}
	return e, nil
}

// entry is one attack of the battery.
type entry struct {
	name, req string
	run       func(Env) Result
}

// Names returns the names of every attack and check, in the battery's fixed order.
func Names() []string {
	out := make([]string, len(battery))
	for i, a := range battery {
		out[i] = a.name
	}
	return out
}

// Requirement returns the requirement numbers an attack proves, "" for an unknown name.
func Requirement(name string) string {
	for _, a := range battery {
		if a.name == name {
			return a.req
		}
	}
	return ""
}

// Run runs one attack by name. An unknown name is a Result with Blocked=false.
func Run(name string, env Env) Result {
	for _, a := range battery {
		if a.name == name {
			r := a.run(env)
			r.Name, r.Requirement = a.name, a.req
			return r
		}
	}
	return Result{Name: name, How: "unknown", Detail: "no such attack; known: " + strings.Join(Names(), " ")}
}

// blocked, notBlocked and check build results.
func blocked(how, detail string) Result { return Result{Blocked: true, How: how, Detail: detail} }

func notBlocked(how, detail string) Result { return Result{How: how, Detail: detail} }

func notConfigured(field string) Result {
	return notBlocked("not configured", "Env."+field+" is empty: the host side must set up this canary")
}

// errnoOf digs the errno out of err (net and os errors wrap it).
func errnoOf(err error) (syscall.Errno, bool) {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e, true
	}
	return 0, false
}

func errnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(int(e))
}

// expectErrno turns the outcome of an attack into a Result: blocked only if err carries one
// of the wanted errnos.
func expectErrno(what string, err error, want ...syscall.Errno) Result {
	if err == nil {
		return notBlocked("succeeded", what+" succeeded")
	}
	e, ok := errnoOf(err)
	if !ok {
		return notBlocked("error", fmt.Sprintf("%s failed without an errno (%v), want %s", what, err, names(want)))
	}
	for _, w := range want {
		if e == w {
			return blocked(errnoName(e), what+": "+e.Error())
		}
	}
	return notBlocked(errnoName(e), fmt.Sprintf("%s failed with %s, not %s: something else stopped it, not the sandbox rule this attack tests", what, errnoName(e), names(want)))
}

func names(es []syscall.Errno) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = errnoName(e)
	}
	return strings.Join(s, " or ")
}

// closeFD closes fds an attack unexpectedly obtained.
func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
