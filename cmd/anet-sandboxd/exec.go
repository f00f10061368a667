package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/nodedirs"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

func init() { commands = append(commands, execCommand()) }

// exitSetup is exec's status when the sandbox itself could not run the command (like env(1)'s
// 125), so it cannot be confused with the command's own status.
const exitSetup = 125

// runFlags are the flags that shape an exec run.
func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "work", Usage: "host work `DIR` bound at /work (default: a fresh dir deleted after the run)"},
		&cli.StringFlag{Name: "endpoint", Usage: "host endpoint `SOCK` bound at " + sandbox.SandboxEndpoint},
		&cli.IntFlag{Name: "port", Value: 8080, Usage: "loopback `PORT` init relays to the endpoint"},
		&cli.StringFlag{Name: "endpoint-addr", Usage: "the run's endpoint on the host loopback, `127.0.0.1:PORT` (macOS: a Seatbelt run has no loopback of its own)"},
		&cli.GenericFlag{Name: "env", Value: &listValue{}, Usage: "endpoint variable `NAME=VALUE` (repeatable)"},
		&cli.StringFlag{Name: "agent-tree", Usage: "agent installation `DIR` bound read-only (default: the program's dir)"},
		&cli.StringFlag{Name: "agent", Usage: "the agent `NAME` (claude, codex, …) whose program CMD is; a backend that checks an agent before its run checks it (macOS)"},
		&cli.StringFlag{Name: "run-root", Usage: "host `DIR` for per-run home and tmp (default: <cache>/anet/runs)"},
		&cli.StringFlag{Name: "memory", Usage: "memory limit, e.g. 2GiB"},
		&cli.Int64Flag{Name: "tasks", Usage: fmt.Sprintf("task limit (default %d)", limits.Tasks)},
		&cli.StringFlag{Name: "disk", Usage: "disk limit for home+tmp+work, e.g. 2GiB"},
		&cli.DurationFlag{Name: "timeout", Usage: fmt.Sprintf("wall clock (default %s)", limits.WallClock)},
		&cli.DurationFlag{Name: "grace", Usage: fmt.Sprintf("time between TERM and KILL (default %s)", sandbox.DefaultGrace)},
		&cli.StringFlag{Name: "outcome", Usage: "write the run's outcome as JSON to `FILE`"},
	}
}

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run a command in exactly the sandbox a run gets",
		ArgsUsage: "-- CMD [ARGS…]",
		Flags:     append(runFlags(), isolationFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.Exit("anet-sandboxd exec: no command (usage: exec [flags] -- CMD ARGS…)", 2)
			}
			prog, err := exec.LookPath(c.Args().First())
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd exec: %v", err), 127)
			}
			if prog, err = filepath.Abs(prog); err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd exec: %v", err), 127)
			}
			argv := append([]string{prog}, c.Args().Tail()...)
			code := runInSandbox(c, argv, sandbox.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
			return cli.Exit("", code)
		},
	}
}

// specFromFlags builds the run spec from the shared flags.
func specFromFlags(c *cli.Context, argv []string) (sandbox.Spec, error) {
	// The node's own dirs (pkg/nodedirs, as anetd places them): the dirs a run must never
	// see, and the default run root.
	dirs, err := nodedirs.Default(nil)
	if err != nil {
		return sandbox.Spec{}, err
	}
	var errs []error
	size := func(name string) int64 {
		// The same sizes as the config file (2GiB, 64MiB, …): one parser, one meaning.
		v := c.String(name)
		if v == "" {
			return 0 // the default
		}
		n, err := limits.ParseSize(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", name, err))
		}
		return n
	}
	spec := sandbox.Spec{
		ID:        launch.RandomName("exec-", 6),
		Mode:      sandbox.ModeSandbox,
		Argv:      argv,
		AgentTree: c.String("agent-tree"),
		Agent:     c.String("agent"),
		RunRoot:   c.String("run-root"),
		Env:       list(c, "env"),
		Hidden:    []string{dirs.Data, dirs.Runtime, dirs.Config},
		Limits: sandbox.Limits{
			Memory: size("memory"), Tasks: c.Int64("tasks"), Disk: size("disk"),
			WallClock: c.Duration("timeout"), Grace: c.Duration("grace"),
		},
	}
	if errs != nil {
		return spec, errors.Join(errs...)
	}
	if spec.RunRoot == "" {
		spec.RunRoot = filepath.Join(dirs.Cache, "runs")
	}
	if w := c.String("work"); w != "" {
		abs, err := filepath.Abs(w)
		if err != nil {
			return spec, fmt.Errorf("--work: %w", err)
		}
		spec.WorkRoot = abs
	}
	if ep := c.String("endpoint"); ep != "" {
		abs, err := filepath.Abs(ep)
		if err != nil {
			return spec, fmt.Errorf("--endpoint: %w", err)
		}
		spec.Endpoint, spec.Port = abs, c.Int("port")
	}
	if addr := c.String("endpoint-addr"); addr != "" {
		_, port, err := net.SplitHostPort(addr)
		if spec.Port, err = strconv.Atoi(port); err != nil {
			return spec, fmt.Errorf("--endpoint-addr %q: want 127.0.0.1:PORT", addr)
		}
		spec.EndpointAddr = addr
	}
	for _, p := range []*string{&spec.AgentTree, &spec.RunRoot} {
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	return spec, nil
}

// runInSandbox starts argv in a run shaped by the flags, stops it on SIGTERM/SIGINT/SIGHUP,
// and returns the exit status to pass through.
func runInSandbox(c *cli.Context, argv []string, stdio sandbox.Stdio) int {
	spec, err := specFromFlags(c, argv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "anet-sandboxd exec: %v\n", err)
		return 2
	}
	// The one check of the run (launch.Prepare): a spec the flags got wrong is a usage
	// error; one the host refuses (a tree it must not expose) is the sandbox's refusal.
	plan, prepErr := launch.Prepare(spec)
	var bad *sandbox.SpecError
	if errors.As(prepErr, &bad) {
		fmt.Fprintf(os.Stderr, "anet-sandboxd exec: %v\n", prepErr)
		return 2
	}
	closeInheritedFds()
	l, _, err := newLauncher(c, quietLogger())
	if err != nil {
		fmt.Fprintf(os.Stderr, "anet-sandboxd exec: %v\n", err)
		return exitSetup
	}
	defer l.Settle() // the run's dirs and cgroups go before exec exits (S3)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	// Whether limits hold here, known without a sandbox of its own: with no probe kept, the
	// run's start carries the probe (one sandbox per exec, S7).
	var lim sandbox.CgroupLimits
	if ll, ok := l.(interface {
		Limits(context.Context) sandbox.CgroupLimits
	}); ok {
		lim = ll.Limits(ctx)
	}
	if msg, refuse := limitsNotice(lim, c.IsSet("memory"), c.IsSet("tasks")); refuse {
		fmt.Fprintf(os.Stderr, "anet-sandboxd exec: %s\n", msg)
		return 2
	} else if msg != "" {
		fmt.Fprintf(os.Stderr, "anet-sandboxd exec: warning: %s\n", msg)
	}
	run, err := sandbox.Run(nil), prepErr
	if err == nil {
		run, err = l.StartPlan(ctx, plan, stdio)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "anet-sandboxd exec: %v\n", err)
		writeOutcome(c.String("outcome"), sandbox.Outcome{ExitCode: -1, Err: err})
		return exitSetup
	}
	out := run.Wait()
	writeOutcome(c.String("outcome"), out)
	if out.Err != nil {
		fmt.Fprintf(os.Stderr, "anet-sandboxd exec: %v\n", out.Err)
		return exitSetup
	}
	if out.Limit != "" {
		fmt.Fprintf(os.Stderr, "anet-sandboxd exec: %s: %s\n", out.Limit, out.Detail)
	}
	return out.ExitCode
}

// limitsNotice says what a run without cgroup limits (S6) means for exec: a warning and the
// command that fixes it, or, when --memory or --tasks asked for a limit that cannot be
// enforced here, a refusal: a limit the user asked for must not silently not exist. Limits
// not known ("": no sandbox here at all) say nothing (the start refuses with its reason).
func limitsNotice(lim sandbox.CgroupLimits, memory, tasks bool) (msg string, refuse bool) {
	if lim != sandbox.CgroupNone {
		return "", false
	}
	fix := sandbox.LimitsFix(sandbox.ThisCgroupHost(os.Getenv))
	what := fmt.Sprintf("%s: %s; fix: %s", reasons.NoCgroupLimits, reasons.Text(reasons.NoCgroupLimits), fix)
	if memory || tasks {
		return "--memory and --tasks cannot be enforced here: " + what, true
	}
	return what, false
}

func writeOutcome(path string, o sandbox.Outcome) {
	if path == "" {
		return
	}
	b, _ := json.Marshal(sandbox.NewWireOutcome(o))
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "anet-sandboxd exec: write outcome: %v\n", err)
	}
}
