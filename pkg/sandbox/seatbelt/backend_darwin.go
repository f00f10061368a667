package seatbelt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/nodedirs"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// Name is the backend's name in pkg/sandbox/launch's registry.
const Name = "seatbelt"

func init() {
	launch.Register(Name, func(o launch.Options) (launch.Backend, error) { return New(o) })
}

// Shape is what anetd must know of a Seatbelt run: it shares the host's loopback and sees
// host paths.
var Shape = sandbox.RunShape{Endpoint: sandbox.EndpointLoopback, HostPaths: true}

// External is the address beyond the machine the self-check must not reach: the connection
// is refused before a packet leaves, so nothing is ever sent to it.
const External = "1.1.1.1:443"

// The DNS items' targets: public resolvers as IP literals (so a refusal cannot be a failed
// name lookup), a public name, and mDNSResponder's socket, where getaddrinfo asks.
var (
	PublicResolvers = []string{"9.9.9.9:53", "1.1.1.1:53"}
	PublicName      = "example.com"
	ResolverSocket  = "/private/var/run/mDNSResponder"
)

// Backend is the Seatbelt backend (launch.Backend, launch.SelfTester).
type Backend struct {
	self     string
	log      *slog.Logger
	home     string // the operator's home, resolved
	userTemp string // the operator's own temp dir, resolved, or ""
}

var (
	_ launch.Backend    = (*Backend)(nil)
	_ launch.SelfTester = (*Backend)(nil)
)

// New returns the backend. A missing sandbox-exec is reported by Probe and Start
// (no_sandbox_exec), so the operator sees it.
func New(o launch.Options) (*Backend, error) {
	log := launch.LogOrDiscard(o.Log)
	home, err := operatorHome()
	if err != nil {
		return nil, fmt.Errorf("seatbelt: %w", err)
	}
	b := &Backend{self: o.Self, log: log, home: home}
	// The per-user temp dir (/private/var/folders/…/T) is where macOS programs write by
	// default, outside TMPDIR: the self-check proves a run cannot.
	if out, err := exec.Command("/usr/bin/getconf", "DARWIN_USER_TEMP_DIR").Output(); err == nil {
		if d, err := filepath.EvalSymlinks(strings.TrimSpace(string(out))); err == nil {
			b.userTemp = d
		}
	}
	return b, nil
}

// operatorHome is the home of the user anet-sandboxd runs as: $HOME, else the user
// database (anetd starts its helpers with a clean environment).
func operatorHome() (string, error) {
	h := os.Getenv("HOME")
	if h == "" {
		u, err := user.Current()
		if err != nil {
			return "", fmt.Errorf("operator home: %w", err)
		}
		h = u.HomeDir
	}
	r, err := filepath.EvalSymlinks(h)
	if err != nil {
		return "", fmt.Errorf("operator home %s: %w", h, err)
	}
	return r, nil
}

// sandboxExec checks that sandbox-exec is there to run.
func sandboxExec() (os.FileInfo, error) {
	fi, err := os.Stat(SandboxExec)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, reasons.New(reasons.NoSandboxExec, fmt.Sprintf("%s: %v", SandboxExec, err))
	}
	return fi, nil
}

// ConfigHash implements launch.Backend: sandbox-exec (its size and time: an OS update
// changes it), the profile and the self-check program.
func (b *Backend) ConfigHash() (string, error) {
	fi, err := sandboxExec()
	if err != nil {
		return "", err
	}
	return sandbox.ConfigHash([]byte(Name), []byte(SandboxExec), []byte(strconv.FormatInt(fi.Size(), 10)),
		[]byte(fi.ModTime().UTC().Format(time.RFC3339Nano)), []byte(profileText), []byte(b.self)), nil
}

// Probe implements launch.Backend: the self-check in a run shaped like every other, with
// the probe's own dirs and a stand-in endpoint, then what bounds a run here.
func (b *Backend) Probe(ctx context.Context) (sandbox.ProbeResult, error) {
	res := sandbox.ProbeResult{At: time.Now(), Limits: sandbox.CgroupNone, Shape: Shape,
		Warnings: []reasons.Code{reasons.NoCgroupLimits}}
	failed := func(code reasons.Code, detail string) (sandbox.ProbeResult, error) {
		r := sandbox.ProbeFailed(code, detail)
		r.Shape, r.Limits, r.Warnings = res.Shape, res.Limits, res.Warnings
		return r, nil
	}
	if _, err := sandboxExec(); err != nil {
		return failed(reasons.NoSandboxExec, err.Error())
	}
	root, err := os.MkdirTemp(b.tempBase(), "anet-probe-")
	if err != nil {
		return failed(reasons.SandboxStartFailed, "probe dir: "+err.Error())
	}
	defer os.RemoveAll(root)
	spec := sandbox.Spec{ID: launch.RandomName("probe-", 6), Mode: sandbox.ModeSandbox, Argv: []string{"/usr/bin/true"},
		RunRoot: root, Hidden: b.nodePaths()}
	p, err := launch.Prepare(spec)
	if err != nil {
		return failed(sandbox.CodeOf(err), err.Error())
	}
	r, err := b.prepare(p)
	if err != nil {
		return failed(sandbox.CodeOf(err), err.Error())
	}
	defer r.cleanupDirs()
	in := b.checkInput(r, 0, "")
	checks, err := selfCheck(ctx, in, b.raw(r))
	if err != nil {
		return failed(reasons.SandboxStartFailed, err.Error())
	}
	res.Checks = append(checks, limitsCheck())
	res.OK = check.AllOK(res.Checks)
	if !res.OK {
		res.Code, res.Detail = reasons.SelfCheckFailed, firstFailure(res.Checks)
	}
	return res, nil
}

// limitsCheck says what bounds a run on macOS, and what does not (S6): a pass that carries
// the no_cgroup_limits warning.
func limitsCheck() check.Check {
	c := check.Pass(ItemLimits, "S6", "in force: wall clock, disk growth (polled), a task count over the run's processes (polled), "+
		"RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE and RLIMIT_NPROC (per user on macOS), no core files; "+
		"no macOS equivalent: the 2 GiB memory limit and an exact task limit (no cgroups)")
	c.Code = reasons.NoCgroupLimits
	return c
}

func firstFailure(cs []check.Check) string {
	for _, c := range cs {
		if !c.OK {
			return c.Name + ": " + c.Detail
		}
	}
	return ""
}

// tempBase is where probe and self-test runs live: the operator's own temp dir.
func (b *Backend) tempBase() string {
	if b.userTemp != "" {
		return b.userTemp
	}
	return "/private/tmp"
}

// nodePaths are the node's own dirs as anetd places them for this user (pkg/nodedirs; the
// probe has no spec naming them): none may be readable in a run.
func (b *Backend) nodePaths() []string {
	d, err := nodedirs.Default(func(k string) string {
		if k == "HOME" {
			return b.home
		}
		return os.Getenv(k)
	})
	if err != nil {
		return nil
	}
	return []string{d.Data, d.Config, d.Runtime}
}

// checkInput is the self-check of run r, whose endpoint is port (0: a stand-in) and agent
// the program agent ("" none).
func (b *Backend) checkInput(r *run, port int, agent string) checkInput {
	node := onPATH("node")
	in := checkInput{
		Home: r.params.Home, Tmp: r.params.Tmp, Work: r.params.Work,
		OperatorHome: b.home, UserTemp: b.userTemp, Hidden: r.hidden, EndpointPort: port,
		Self: b.self, Node: node, NodeMissing: node == "", Agent: agent,
		Keychain: "/usr/bin/security", Setuid: []string{"/usr/bin/sudo", "-n", "/usr/bin/id", "-u"}, External: External,
		Peer: b.raw(r),
	}
	b.systemTargets(&in, r.params.DeveloperDir)
	return in
}

// systemTargets adds what every self-check asks of macOS itself: its services and
// launchd, other terminals, DNS and UDP beyond the machine, and the tools agents start.
func (b *Backend) systemTargets(in *checkInput, developerDir string) {
	in.Services, in.Launchctl, in.OperatorTTYs = true, "/bin/launchctl", true
	in.UDP, in.DNSName = PublicResolvers, PublicName
	if _, err := os.Lstat(ResolverSocket); err == nil {
		in.ResolverSocket = ResolverSocket
	}
	// developerDir is the one the run's profile opens, where the xcrun shims find git and
	// python3: without it the /usr/bin shims only offer to install the tools, and there is
	// nothing to check.
	dev, err := os.Stat(developerDir)
	in.Tools = defaultTools(err == nil && dev.IsDir(), onPATH("npm"))
}

// onPATH is the first program name in a run's PATH, or "".
func onPATH(name string) string {
	for _, d := range filepath.SplitList(PATH) {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// raw runs programs in r's profile directly under sandbox-exec, for the self-check: same
// profile, same parameters but the endpoint port, same environment, no wrapper.
func (b *Backend) raw(r *run) inProfile {
	return func(ctx context.Context, port int, argv []string) ([]byte, string, int, error) {
		p := r.params
		p.EndpointPort = port
		full, err := Argv(p, argv)
		if err != nil {
			return nil, "", 0, err
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		stdout := sandbox.NewHead(sandbox.MaxOutput)
		stderr := sandbox.NewTail(nil, 4096)
		cmd := exec.CommandContext(ctx, full[0], full[1:]...)
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = r.env, r.params.Work, stdout, stderr
		// A session of its own, as a run has (the wrapper's Setsid): when the probe runs
		// from a terminal, what it checks does not share the operator's controlling tty. A
		// session leader leads its process group too, which the kill below ends.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		err = cmd.Run()
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the check left behind
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.Bytes(), stderr.String(), exitStatus(err), nil
		}
		return stdout.Bytes(), stderr.String(), 0, err
	}
}

// SelfTest implements launch.SelfTester: the self-check once more, this time through the
// whole run path (the limits wrapper, the watch, the check before the turn), with the
// resource limits and the environment checked from inside.
func (b *Backend) SelfTest(ctx context.Context, o launch.SelfTestOptions) ([]check.Check, error) {
	root := o.RunRoot
	if root == "" {
		d, err := os.MkdirTemp(b.tempBase(), "anet-selftest-")
		if err != nil {
			return nil, fmt.Errorf("self-test dir: %w", err)
		}
		defer os.RemoveAll(d)
		root = d
	}
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("self-test dir: %w", err)
	}
	spec := sandbox.Spec{ID: launch.RandomName("selftest-", 6), Mode: sandbox.ModeSandbox, Argv: []string{"/usr/bin/true"},
		RunRoot: root, Hidden: b.nodePaths(), Limits: o.Limits}
	home, tmp, work := sandbox.HostRunDirs(spec)
	// The process limit depends on the user's processes when the run starts: not checked
	// exactly from inside.
	lim := runLimits(spec.Limits.WithDefaults(), 0)
	in := checkInput{
		Home: home, Tmp: tmp, Work: work, OperatorHome: b.home, UserTemp: b.userTemp, Hidden: existing(spec.Hidden),
		Self: b.self, Keychain: "/usr/bin/security", Setuid: []string{"/usr/bin/sudo", "-n", "/usr/bin/id", "-u"},
		External: External, Limits: &lim, Env: envNames(RunEnv(home, tmp, nil), nil),
	}
	// No peer here: each program below starts as a run, whose own check before the turn
	// starts one beside it.
	b.systemTargets(&in, activeDeveloperDir(b.home))
	// Each program runs as a run of its own, started as anetd's are, one after the other in
	// the same run dirs (a run's dirs are made fresh and removed with it).
	asRun := func(ctx context.Context, port int, argv []string) ([]byte, string, int, error) {
		s := spec
		s.Argv, s.EndpointAddr, s.Port = argv, "127.0.0.1:"+strconv.Itoa(port), port
		stdout := sandbox.NewHead(sandbox.MaxOutput)
		stderr := sandbox.NewTail(nil, 4096)
		p, err := launch.Prepare(s)
		if err != nil {
			return nil, "", 0, err
		}
		run, err := b.start(ctx, p, sandbox.Stdio{Stdout: stdout, Stderr: stderr}, true)
		if err != nil {
			return nil, "", 0, err
		}
		out := run.Wait()
		if out.Err != nil {
			return stdout.Bytes(), stderr.String(), out.ExitCode, out.Err
		}
		return stdout.Bytes(), stderr.String(), out.ExitCode, nil
	}
	return selfCheck(ctx, in, asRun)
}
